package core

import (
	"fmt"
	"math"
	"strconv"
)

// Compaction triggers.
const (
	TriggerManual    = "manual"
	TriggerThreshold = "threshold"
	TriggerProvider  = "provider" // native compaction returned by a generation
)

// FailureCompaction is the failure kind of a compaction that produced no
// usable replacement; the original entries stay.
const FailureCompaction = "compaction_failed"

// RejectCompactionPending is the rejection of runs and context edits while
// standalone compaction is pending; hosts hold such commands until it ends.
const RejectCompactionPending = "compaction_pending"

// RequestCompaction asks for standalone compaction now (the manual trigger).
type RequestCompaction struct {
	AtMs         int64
	CompactionID string
}

// CompactionResult reports the compactor's answer for a pending compaction.
type CompactionResult struct {
	AtMs            int64  `json:"atMs,omitempty"`
	CompactionID    string `json:"compactionId"`
	ContextRevision int64  `json:"contextRevision"`
	// Entries replace the compacted entries (a summary or native items).
	Entries []EntryInput `json:"entries,omitempty"`
	Usage   Usage        `json:"usage"`
	// Failure ends the compaction without changing the context.
	Failure *Failure `json:"failure,omitempty"`
}

func (RequestCompaction) command() {}
func (CompactionResult) command()  {}

// CompactionRequested records standalone compaction work: the context
// revision it covers and the entries it will replace.
type CompactionRequested struct {
	CompactionID    string   `json:"compactionId"`
	Trigger         string   `json:"trigger"`
	ContextRevision int64    `json:"contextRevision"`
	EntryIDs        []string `json:"entryIds"`
	// EstimatedTokens is the sum of the entries' token estimates.
	EstimatedTokens int64 `json:"estimatedTokens"`
}

type CompactionCompleted struct {
	CompactionID string `json:"compactionId"`
	Usage        Usage  `json:"usage"`
}

type CompactionFailed struct {
	CompactionID string  `json:"compactionId"`
	Error        Failure `json:"error"`
}

// ContextCompacted removes entries and puts Entries where the first removed
// one stood. History keeps the removed entries' events and bytes.
type ContextCompacted struct {
	BaseRevision int64    `json:"baseRevision"`
	CompactionID string   `json:"compactionId,omitempty"`
	Trigger      string   `json:"trigger"`
	Removed      []string `json:"removedEntryIds"`
	Entries      []Entry  `json:"entries,omitempty"`
}

// PendingCompaction is standalone compaction between its request and its
// result.
type PendingCompaction struct {
	ID              string   `json:"id"`
	Trigger         string   `json:"trigger"`
	ContextRevision int64    `json:"contextRevision"`
	EntryIDs        []string `json:"entryIds"`
}

// CompactWork is the host's part of a pending compaction: the entries to
// send to the compactor (superseded catalogs are dropped, not summarized).
type CompactWork struct {
	CompactionID    string
	ContextRevision int64
	Config          SessionConfig
	Entries         []Entry
}

// Compactable returns the entries compaction may remove, in request order:
// conversation (messages, reasoning, native items, earlier summaries),
// finished tool calls with their results, and superseded catalogs. It never
// includes instructions, current catalogs, skill activations, or the calls
// and results of tool work still open; input not yet consumed is not in the
// context at all.
func (s *State) Compactable() []Entry {
	var out []Entry
	s.eachCompactable(func(e *Entry) bool {
		out = append(out, *e)
		return true
	})
	return out
}

// eachCompactable calls fn with the entries Compactable returns, in order,
// until fn returns false, without collecting them: the automatic
// compaction gate asks for their tokens after every turn.
func (s *State) eachCompactable(fn func(*Entry) bool) {
	var open map[string]bool // nil while no tool call is open, as between turns
	for _, c := range s.OpenCalls() {
		if open == nil {
			open = map[string]bool{}
		}
		open[c.CallID] = true
	}
	var superseded map[string]bool // built at the first catalog: State.superseded reads every entry
	ctx := s.Context()
	for i := range ctx {
		e := &ctx[i] // an entry is large: a copy of each cost more than the rest
		switch e.Kind {
		case EntryInstructions, EntrySkillActivation:
			continue
		case EntryCatalog:
			if superseded == nil {
				superseded = map[string]bool{}
				for j := range ctx {
					if id := ctx[j].Supersedes; id != "" {
						superseded[id] = true
					}
				}
			}
			if !superseded[e.ID] {
				continue
			}
		case EntryToolCall, EntryToolResult:
			if open[e.CallID] {
				continue
			}
		}
		if !fn(e) {
			return
		}
	}
}

// CompactableTokens sums the token estimates of the compactable entries. It
// reports false when there is no usable aggregate: an entry without an
// estimate, or a sum that overflows. Provider usage is never substituted.
func (s *State) CompactableTokens() (int64, bool) {
	var sum int64
	ok := true
	s.eachCompactable(func(e *Entry) bool {
		t := e.TokenEstimate
		if t.Quality == "" || t.Tokens < 0 || t.Tokens > math.MaxInt64-sum {
			ok = false
			return false
		}
		sum += t.Tokens
		return true
	})
	if !ok {
		return 0, false
	}
	return sum, true
}

func compactionPending(s *State) error {
	if p := s.Compaction; p != nil {
		return reject(RejectCompactionPending, "session %s is compacting its context (%s); retry when it finishes", s.SessionID, p.ID)
	}
	return nil
}

func validateCompaction(cfg SessionConfig) error {
	c := cfg.Compaction
	if c == nil {
		return nil
	}
	switch c.Mode {
	case CompactionDisabled, CompactionProviderStandalone:
	case CompactionProviderTriggered:
		if cfg.Model.APIKind != APIOpenAIResponses {
			return reject(RejectInvalidConfiguration, "compaction mode %s needs API kind %s; %s sessions use %s", c.Mode, APIOpenAIResponses, cfg.Model.APIKind, CompactionProviderStandalone)
		}
	default:
		return reject(RejectInvalidConfiguration, "compaction.mode %q is not one of %s, %s, %s", c.Mode, CompactionDisabled, CompactionProviderTriggered, CompactionProviderStandalone)
	}
	if c.ThresholdTokens < 0 || c.TargetTokens < 0 {
		return reject(RejectInvalidConfiguration, "compaction thresholdTokens and targetTokens must not be negative")
	}
	return nil
}

func admitRequestCompaction(s *State, c RequestCompaction) (Admission, error) {
	if err := compactionPending(s); err != nil {
		return Admission{}, err
	}
	if err := idleAndOpen(s); err != nil {
		return Admission{}, err
	}
	if c.CompactionID == "" {
		return Admission{}, reject(RejectInvalidInput, "compaction id is required")
	}
	b := s.newBatch(c.AtMs)
	if !b.requestCompaction(c.CompactionID, TriggerManual) {
		return Admission{}, reject(RejectInvalidInput, "nothing to compact: the context holds only instructions, current catalogs and skills")
	}
	return Admission{Proposals: b.props}, nil
}

// requestCompaction proposes compaction of the compactable entries; false
// when there are none.
func (b *batch) requestCompaction(id, trigger string) bool {
	entries := b.s.Compactable()
	if len(entries) == 0 {
		return false
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	tokens, _ := b.s.CompactableTokens()
	b.add(KindCompactionRequested, nil, CompactionRequested{CompactionID: id, Trigger: trigger, ContextRevision: b.rev, EntryIDs: ids, EstimatedTokens: tokens})
	return true
}

// planAutoCompaction proposes threshold compaction at an idle boundary: the
// policy is standalone with a threshold, a run ended since the last
// compaction (so a summary above the threshold does not loop), and the
// compactable estimate is usable and reaches the threshold.
func planAutoCompaction(s *State, at int64) (Intent, bool) {
	c := s.Config.Compaction
	if c == nil || c.Mode != CompactionProviderStandalone || c.ThresholdTokens <= 0 || s.runsSinceCompaction == 0 {
		return Intent{}, false
	}
	if tokens, ok := s.CompactableTokens(); !ok || tokens < c.ThresholdTokens {
		return Intent{}, false
	}
	b := s.newBatch(at)
	if !b.requestCompaction("compaction-"+strconv.FormatInt(s.Head+1, 10), TriggerThreshold) {
		return Intent{}, false
	}
	return appendIntent(s, b), true
}

// PendingCompactWork is the pending compaction as work for the host; nil when
// none is pending.
func (s *State) PendingCompactWork() *CompactWork {
	if s.Compaction == nil {
		return nil
	}
	p := s.Compaction
	w := &CompactWork{CompactionID: p.ID, ContextRevision: p.ContextRevision, Config: s.Config}
	for _, e := range s.Context() {
		if contains(p.EntryIDs, e.ID) && e.Kind != EntryCatalog {
			w.Entries = append(w.Entries, e)
		}
	}
	return w
}

func admitCompactionResult(s *State, c CompactionResult) (Admission, error) {
	p := s.Compaction
	if p == nil || p.ID != c.CompactionID || p.ContextRevision != c.ContextRevision || s.Revision != p.ContextRevision {
		return Admission{}, reject(RejectStaleResult, "compaction %s at revision %d is not pending", c.CompactionID, c.ContextRevision)
	}
	b := s.newBatch(c.AtMs)
	if c.Failure == nil && len(c.Entries) == 0 {
		c.Failure = &Failure{Kind: FailureCompaction, Message: "the compactor returned no replacement"}
	}
	if c.Failure != nil {
		b.add(KindCompactionFailed, nil, CompactionFailed{CompactionID: p.ID, Error: *c.Failure})
		return Admission{Proposals: b.props}, nil
	}
	for i, in := range c.Entries {
		if err := validRef(in); err != nil {
			return Admission{}, err
		}
		switch in.Kind {
		case EntrySummary, EntryCompaction, EntryMessage, EntryReasoning, EntryProviderOpaque:
		default:
			return Admission{}, reject(RejectInvalidInput, "compaction entries[%d] has kind %q; a replacement is a summary, native compaction material or conversation", i, in.Kind)
		}
		c.Entries[i].Key, c.Entries[i].Scope, c.Entries[i].CallID, c.Entries[i].ToolName = "", "", "", ""
	}
	b.compacted(p.ID, p.Trigger, p.EntryIDs, c.Entries)
	b.add(KindCompactionCompleted, nil, CompactionCompleted{CompactionID: p.ID, Usage: c.Usage})
	return Admission{Proposals: b.props}, nil
}

// compacted proposes the replacement of removed by inputs.
func (b *batch) compacted(id, trigger string, removed []string, inputs []EntryInput) {
	out := make([]Entry, len(inputs))
	for i, in := range inputs {
		b.nextEntry++
		out[i] = Entry{ID: EntryID(b.nextEntry), Kind: in.Kind, Role: in.Role, Source: SourceRuntime, Content: in.Content,
			TokenEstimate: in.TokenEstimate, Preview: in.Preview, Origin: in.Origin, ProvenanceRef: in.ProvenanceRef}
	}
	b.add(KindContextCompacted, nil, ContextCompacted{BaseRevision: b.rev, CompactionID: id, Trigger: trigger, Removed: removed, Entries: out})
	b.rev++
}

// applyCompacted removes entries and inserts the replacement where the first
// removed entry stood.
func (s *State) applyCompacted(p ContextCompacted) error {
	for _, e := range p.Entries {
		if _, dup := s.entryIDs[e.ID]; dup || e.ID == "" {
			return fmt.Errorf("compaction inserts duplicate or empty entry id %q", e.ID)
		}
	}
	at := -1
	for i, e := range s.entries {
		if contains(p.Removed, e.ID) {
			at = i
			break
		}
	}
	s.removeEntries(p.Removed)
	if at < 0 || at > len(s.entries) {
		at = len(s.entries)
	}
	ins := make([]Entry, 0, len(s.entries)+len(p.Entries))
	ins = append(ins, s.entries[:at]...)
	ins = append(ins, p.Entries...)
	ins = append(ins, s.entries[at:]...)
	s.entries = ins
	s.recount()
	for _, e := range p.Entries {
		s.entryIDs[e.ID] = struct{}{}
		s.nextEntry++
	}
	return nil
}
