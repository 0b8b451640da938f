package core

import (
	"encoding/json"
	"fmt"
	"github.com/cairn-agents/cairn/content"
	"strings"
)

// Admission is the outcome of an accepted command: the events to append and,
// for run commands, the run they concern.
type Admission struct {
	RunID  string
	Status string
	// Revision is the context revision once the proposals are applied.
	Revision int64
	// EntryIDs are the ids of the context entries the proposals add.
	EntryIDs []string
	// Duplicate is set when a retried submission matched an earlier one; it
	// proposes nothing.
	Duplicate bool
	// ConfigPending is set when a config change waits for the next idle
	// boundary (the session was busy).
	ConfigPending bool
	Proposals     []Proposal
}

// Admit decides a command against the state. It is pure: a rejection returns
// a *Rejection and proposes nothing; an acceptance returns proposals that the
// host must append and feed back before admitting anything else.
func Admit(s *State, cmd Command) (Admission, error) {
	a, err := admit(s, cmd)
	if err != nil {
		return a, err
	}
	a.Revision = s.Revision
	for _, p := range a.Proposals {
		switch p.Kind {
		case KindContextEntriesApplied:
			a.Revision++
			var applied ContextEntriesApplied
			if json.Unmarshal(p.Payload, &applied) == nil {
				for _, e := range applied.Entries {
					a.EntryIDs = append(a.EntryIDs, e.ID)
				}
			}
		case KindContextEntriesRemoved, KindContextKeysRemoved, KindContextCompacted:
			a.Revision++
		}
	}
	return a, nil
}

func admit(s *State, cmd Command) (Admission, error) {
	if _, open := cmd.(OpenSession); !open && !s.Opened {
		return Admission{}, reject(RejectUnknownReference, "session is not open")
	}
	switch c := cmd.(type) {
	case OpenSession:
		return admitOpen(s, c)
	case ChangeConfig:
		return admitChangeConfig(s, c)
	case CloseSession:
		return admitClose(s, c)
	case StartRun:
		return admitStartRun(s, c)
	case Steer:
		return admitSteer(s, c)
	case CancelRun:
		return admitCancel(s, c)
	case FailRun:
		return admitFailRun(s, c)
	case AppendContext:
		return admitAppendContext(s, c)
	case RemoveContext:
		return admitRemoveContext(s, c)
	case GenerationResult:
		return admitGeneration(s, c)
	case ToolResult:
		c.client = false // only SubmitToolOutput answers a client's call
		return admitToolResult(s, c)
	case SubmitToolOutput:
		return admitSubmitToolOutput(s, c)
	case DecideApproval:
		return admitDecideApproval(s, c)
	case NoteWarning:
		return admitNoteWarning(s, c)
	case ExpireToolCall:
		return admitExpireToolCall(s, c)
	case RequestCompaction:
		return admitRequestCompaction(s, c)
	case CompactionResult:
		return admitCompactionResult(s, c)
	case TranscriptionResult:
		return admitTranscriptionResult(s, c)
	}
	return Admission{}, reject(RejectInvalidInput, "unknown command %T", cmd)
}

// ValidateConfig checks a session config on its own.
func ValidateConfig(cfg SessionConfig) error {
	m := cfg.Model
	switch {
	case m.ProviderID == "":
		return reject(RejectInvalidConfiguration, "model.providerId is required")
	case m.Model == "":
		return reject(RejectInvalidConfiguration, "model.model is required")
	case m.APIKind != APIChatCompletions && m.APIKind != APIOpenAIResponses && m.APIKind != APIAnthropicMessages:
		return reject(RejectInvalidConfiguration, "model.apiKind %q is not one of %s, %s, %s", m.APIKind, APIChatCompletions, APIOpenAIResponses, APIAnthropicMessages)
	case cfg.MaxTurns < 0:
		return reject(RejectInvalidConfiguration, "maxTurns must not be negative")
	case len(cfg.ProviderParams) > 0 && (len(cfg.ProviderParams) < 2 || cfg.ProviderParams[0] != '{'):
		return reject(RejectInvalidConfiguration, "providerParams must be a JSON object")
	}
	if len(cfg.ProviderParams) > 0 {
		if _, err := content.Canonical(cfg.ProviderParams); err != nil {
			return reject(RejectInvalidConfiguration, "providerParams: %v", err)
		}
	}
	if err := validateLinks(cfg.Links); err != nil {
		return err
	}
	if err := validateCompaction(cfg); err != nil {
		return err
	}
	if err := validateTranscription(cfg.Transcription); err != nil {
		return err
	}
	for i, t := range cfg.Tools {
		if t == "" {
			return reject(RejectInvalidConfiguration, "tools[%d] is empty", i)
		}
		if contains(cfg.Tools[:i], t) {
			return reject(RejectInvalidConfiguration, "tool %q is granted twice", t)
		}
	}
	if err := validateClientTools(cfg); err != nil {
		return err
	}
	if err := validateMCP(cfg); err != nil {
		return err
	}
	return validateApprovals(cfg)
}

// canonicalConfig validates a config and puts its provider parameters in
// canonical form, so equal parameters always fingerprint alike.
func canonicalConfig(cfg SessionConfig) (SessionConfig, error) {
	if err := ValidateConfig(cfg); err != nil {
		return cfg, err
	}
	if len(cfg.ProviderParams) > 0 {
		cfg.ProviderParams, _ = content.Canonical(cfg.ProviderParams) // validated above
	}
	if len(cfg.ClientTools) > 0 {
		tools := make([]ClientTool, len(cfg.ClientTools))
		for i, t := range cfg.ClientTools {
			t.Parameters, _ = content.Canonical(t.Parameters) // validated above
			tools[i] = t
		}
		cfg.ClientTools = tools
	}
	return cfg, nil
}

func admitOpen(s *State, c OpenSession) (Admission, error) {
	if s.Opened {
		return Admission{}, reject(RejectSessionExists, "session %s already exists", s.SessionID)
	}
	if c.SessionID == "" {
		return Admission{}, reject(RejectInvalidInput, "session id is required")
	}
	cfg, err := canonicalConfig(c.Config)
	if err != nil {
		return Admission{}, err
	}
	if err := validParent(c.Parent); err != nil {
		return Admission{}, err
	}
	b := s.newBatch(c.AtMs)
	b.add(KindSessionOpened, nil, SessionOpened{SessionID: c.SessionID, Config: cfg, Parent: c.Parent})
	if err := b.mainInstructions(c.Instructions); err != nil {
		return Admission{}, err
	}
	return Admission{Proposals: b.props}, nil
}

// mainInstructionsEntry is in as the session's main instructions entry.
func mainInstructionsEntry(in EntryInput) EntryInput {
	in.Kind, in.Key = EntryInstructions, InstructionKeyPrefix+"main"
	return in
}

// checkedInstructions is in, when given, as a checked main instructions
// entry; nil without one.
func checkedInstructions(in *EntryInput) (*EntryInput, error) {
	if in == nil {
		return nil, nil
	}
	e := mainInstructionsEntry(*in)
	if err := validRef(e); err != nil {
		return nil, err
	}
	return &e, nil
}

// mainInstructions applies in, when given, as the session's main
// instructions (a keyed entry, so a new one replaces the old).
func (b *batch) mainInstructions(in *EntryInput) error {
	e, err := checkedInstructions(in)
	if e != nil {
		b.entries([]EntryInput{*e}, SourceAPI, "", nil)
	}
	return err
}

// admitChangeConfig changes an idle session's config at once; a session
// with an active or queued run gets it at its next idle boundary (see
// planPendingConfig), a later request replacing an earlier one.
func admitChangeConfig(s *State, c ChangeConfig) (Admission, error) {
	if s.Closed {
		return Admission{}, reject(RejectSessionClosed, "session %s is closed", s.SessionID)
	}
	if err := compactionPending(s); err != nil {
		return Admission{}, err
	}
	if want := c.ExpectedRevision; want != nil && *want != s.ConfigRevision {
		actual := s.ConfigRevision
		return Admission{}, &Rejection{Kind: RejectRevisionConflict, Message: fmt.Sprintf("expected config revision %d, actual %d", *want, actual), Expected: want, Actual: &actual}
	}
	cfg, err := canonicalConfig(c.Config)
	if err != nil {
		return Admission{}, err
	}
	if cfg.Model.APIKind != s.Config.Model.APIKind {
		return Admission{}, reject(RejectInvalidConfiguration, "a session's API kind is fixed (%s); use a new session", s.Config.Model.APIKind)
	}
	b := s.newBatch(c.AtMs)
	if s.HasWork() {
		instr, err := checkedInstructions(c.Instructions)
		if err != nil {
			return Admission{}, err
		}
		b.add(KindSessionConfigChangeRequested, nil, SessionConfigChangeRequested{Config: cfg, Instructions: instr})
		return Admission{Proposals: b.props, ConfigPending: true}, nil
	}
	b.add(KindSessionConfigChanged, nil, SessionConfigChanged{Config: cfg})
	if err := b.mainInstructions(c.Instructions); err != nil {
		return Admission{}, err
	}
	return Admission{Proposals: b.props}, nil
}

func admitClose(s *State, c CloseSession) (Admission, error) {
	if err := idleAndOpen(s); err != nil {
		return Admission{}, err
	}
	b := s.newBatch(c.AtMs)
	b.add(KindSessionClosed, nil, SessionClosed{Reason: c.Reason})
	return Admission{Proposals: b.props}, nil
}

func idleAndOpen(s *State) error {
	if s.Closed {
		return reject(RejectSessionClosed, "session %s is closed", s.SessionID)
	}
	if err := compactionPending(s); err != nil {
		return err
	}
	if s.HasWork() {
		return reject(RejectActiveWork, "session %s has an active or queued run", s.SessionID)
	}
	return nil
}

func validInput(items []InputItem) error {
	if len(items) == 0 {
		return reject(RejectInvalidInput, "input is empty")
	}
	for i, it := range items {
		if err := it.Content.Validate(); err != nil {
			return reject(RejectInvalidInput, "input[%d]: %v", i, err)
		}
		if err := validItemKind(i, it); err != nil {
			return err
		}
	}
	return nil
}

func validRef(in EntryInput) error {
	if err := in.Content.Validate(); err != nil {
		return reject(RejectInvalidInput, "entry content: %v", err)
	}
	// A ref without a digest cannot be encoded into an event: reject it here
	// rather than fail while proposing.
	if in.ProvenanceRef != nil {
		if err := in.ProvenanceRef.Validate(); err != nil {
			return reject(RejectInvalidInput, "entry provenanceRef: %v", err)
		}
	}
	return nil
}

func admitStartRun(s *State, c StartRun) (Admission, error) {
	if s.Closed {
		return Admission{}, reject(RejectSessionClosed, "session %s is closed", s.SessionID)
	}
	if err := compactionPending(s); err != nil {
		return Admission{}, err
	}
	if c.RetryOf != "" {
		if len(c.Input) > 0 {
			return Admission{}, reject(RejectInvalidInput, "a retried run takes no input: its run's input is in context already")
		}
		if adm, err := retryable(s, c.RetryOf); adm.RunID != "" || err != nil {
			return adm, err
		}
		c.Input = []InputItem{}
	} else if err := validInput(c.Input); err != nil {
		return Admission{}, err
	}
	if hasAudio(c.Input) && s.Config.Transcription == nil {
		return Admission{}, reject(RejectTranscriptionNotConfigured, "audio input needs a transcription configuration (session config \"transcription\")")
	}
	for i, a := range c.Activations {
		if a.Kind != EntrySkillActivation {
			return Admission{}, reject(RejectInvalidInput, "activations[%d] has kind %q; a run activates only %s entries", i, a.Kind, EntrySkillActivation)
		}
		if err := validRef(a); err != nil {
			return Admission{}, err
		}
	}
	fp := InputFingerprint(c.Input)
	if c.SubmissionID != "" {
		if id, seen := s.submissions[c.SubmissionID]; seen {
			r := s.runs[id]
			if r.InputFingerprint != fp {
				return Admission{}, reject(RejectDuplicateSubmission, "submission %s was already used for run %s with different input", c.SubmissionID, id)
			}
			return Admission{RunID: r.ID, Status: r.Status, Duplicate: true}, nil
		}
	}
	if c.RunID == "" {
		return Admission{}, reject(RejectInvalidInput, "run id is required")
	}
	if s.runs[c.RunID] != nil {
		return Admission{}, reject(RejectInvalidInput, "run %s already exists", c.RunID)
	}
	compact, err := windowFit(s, c)
	if err != nil {
		return Admission{}, err
	}
	b := s.newBatch(c.AtMs)
	if compact && !b.requestCompaction("compaction-"+c.RunID, TriggerContextWindow) {
		compact = false
	}
	queued := s.HasWork() || compact
	b.add(KindRunAccepted, runJoins(c.RunID), RunAccepted{RunID: c.RunID, SubmissionID: c.SubmissionID, InputFingerprint: fp, Input: c.Input, Queued: queued, Activations: c.Activations, RetryOf: c.RetryOf})
	status := StatusRunning
	if queued {
		status = StatusQueued
	}
	return Admission{RunID: c.RunID, Status: status, Proposals: b.props}, nil
}

func admitSteer(s *State, c Steer) (Admission, error) {
	r := s.ActiveRun()
	if r == nil || r.CancelRequested {
		return Admission{}, reject(RejectNoActiveRun, "session %s has no active run to steer", s.SessionID)
	}
	if err := validInput(c.Input); err != nil {
		return Admission{}, err
	}
	if hasAudio(c.Input) {
		return Admission{}, reject(RejectInvalidInput, "audio input is accepted when a run starts, not as steering")
	}
	if c.SteeringID == "" {
		return Admission{}, reject(RejectInvalidInput, "steering id is required")
	}
	b := s.newBatch(c.AtMs)
	b.add(KindRunSteeringAccepted, runJoins(r.ID), RunSteeringAccepted{RunID: r.ID, SteeringID: c.SteeringID, Input: c.Input})
	return Admission{RunID: r.ID, Status: r.Status, Proposals: b.props}, nil
}

// admitCancel ends a queued run at once; for the active run it closes the
// open turn itself, giving every unfinished tool call a cancelled result so
// no call in context lacks its result. No further model turn is taken.
func admitCancel(s *State, c CancelRun) (Admission, error) {
	r := s.runs[c.RunID]
	if r == nil {
		return Admission{}, reject(RejectUnknownReference, "run %s not found", c.RunID)
	}
	if r.Status != StatusQueued && r.Status != StatusRunning {
		return Admission{RunID: r.ID, Status: r.Status}, nil // already over: nothing to cancel
	}
	b := s.newBatch(c.AtMs)
	b.add(KindRunCancelRequested, runJoins(r.ID), RunCancelRequested{RunID: r.ID, Reason: c.Reason})
	stopTurn(b, r, CallCancelled, constantResult(ContentRefBytes{ToolCancelledRef, ToolCancelledBytes}, "cancelled"), TurnOutcomeCancelled)
	b.endRun(r.ID, KindRunCancelled, RunCancelled{RunID: r.ID})
	return Admission{RunID: r.ID, Status: StatusCancelled, Proposals: b.props}, nil
}

func admitFailRun(s *State, c FailRun) (Admission, error) {
	r := s.runs[c.RunID]
	if r == nil {
		return Admission{}, reject(RejectUnknownReference, "run %s not found", c.RunID)
	}
	if c.Failure.Kind == "" || c.Failure.Message == "" {
		return Admission{}, reject(RejectInvalidInput, "a run failure needs a kind and a message")
	}
	if c.Failure.Ref != nil {
		if err := c.Failure.Ref.Validate(); err != nil {
			return Admission{}, reject(RejectInvalidInput, "failure ref: %v", err)
		}
	}
	if r.Status != StatusQueued && r.Status != StatusRunning {
		return Admission{RunID: r.ID, Status: r.Status}, nil // already over
	}
	b := s.newBatch(c.AtMs)
	stopTurn(b, r, CallFailed, constantResult(ContentRefBytes{ToolFailedRef, ToolFailedBytes}, "tool failed"), TurnOutcomeFailed)
	b.endRun(r.ID, KindRunFailed, RunFailed{RunID: r.ID, Error: c.Failure})
	return Admission{RunID: r.ID, Status: StatusFailed, Proposals: b.props}, nil
}

// stopTurn ends a run's unfinished turn early: each unfinished call
// completes with status and result, then the batch and the turn.
func stopTurn(b *batch, r *Run, status string, result EntryInput, outcome string) {
	t := r.Turn
	if r.Status != StatusRunning || t == nil || t.Completed {
		return
	}
	for _, call := range t.Calls {
		if call.Completed {
			continue
		}
		if !call.Started {
			b.add(KindToolCallStarted, callJoins(r.ID, t.N, call.CallID), ToolCallStarted{RunID: r.ID, Turn: t.N, CallID: call.CallID, Name: call.Name, Arguments: call.Arguments})
		}
		completeCall(b, r.ID, t.N, call.ToolCall, status, result)
	}
	applyResults(b, r.ID, t.N, turnCalls(t), t)
	if t.BatchStarted {
		b.add(KindToolBatchCompleted, turnJoins(r.ID, t.N), ToolBatchCompleted{RunID: r.ID, Turn: t.N})
	}
	b.add(KindTurnCompleted, turnJoins(r.ID, t.N), TurnCompleted{RunID: r.ID, Turn: t.N, Outcome: outcome})
}

// constantResult is a tool result entry pointing at a constant blob. Its
// estimate uses the runtime's heuristic (bytes/4 + 4), computed here because
// the core knows these bytes.
func constantResult(ref ContentRefBytes, preview string) EntryInput {
	return EntryInput{Content: ref.Ref, TokenEstimate: TokenEstimate{Tokens: int64(len(ref.Bytes)+3)/4 + 4, Quality: EstimateHeuristic}, Preview: preview}
}

// completeCall proposes a call's completion. Its result entry joins the
// context when the batch ends (applyResults): a batch's results then
// stand in the order the model called them, whatever order they finish
// in, and the next request carries them so.
func completeCall(b *batch, runID string, turn int, call ToolCall, status string, result EntryInput) {
	result.Kind, result.Role, result.CallID, result.ToolName, result.Key, result.Scope = EntryToolResult, "", call.CallID, call.Name, "", ""
	if b.s.resultsPerCall {
		joins := callJoins(runID, turn, call.CallID)
		b.add(KindToolCallCompleted, joins, ToolCallCompleted{RunID: runID, Turn: turn, CallID: call.CallID, Status: status, Result: result.Content})
		b.entries([]EntryInput{result}, resultSource(status), runID, joins)
		return
	}
	b.add(KindToolCallCompleted, callJoins(runID, turn, call.CallID), ToolCallCompleted{RunID: runID, Turn: turn, CallID: call.CallID, Status: status, Result: result.Content, Entry: &result})
	if b.done == nil {
		b.done = map[string]doneCall{}
	}
	b.done[call.CallID] = doneCall{entry: result, status: status}
}

// doneCall is a call completed by the batch being built.
type doneCall struct {
	entry  EntryInput
	status string
}

// resultSource is who a result with status comes from.
func resultSource(status string) string {
	if status != CallOK && status != CallError {
		return SourceRuntime
	}
	return SourceTool
}

// applyResults proposes the result entries of a batch that ends, in the
// order of calls: those completed by b, then those held by t's calls
// since an earlier admission. (A call completed by an older core applied
// its entry then and holds none.)
func applyResults(b *batch, runID string, turn int, calls []ToolCall, t *Turn) {
	for _, c := range calls {
		d, ok := b.done[c.CallID]
		if !ok && t != nil {
			if held := t.call(c.CallID); held != nil && held.Result != nil {
				d, ok = doneCall{entry: *held.Result, status: held.Status}, true
			}
		}
		if ok {
			b.entries([]EntryInput{d.entry}, resultSource(d.status), runID, callJoins(runID, turn, c.CallID))
		}
	}
}

// turnCalls are the calls of t, in the order the model made them.
func turnCalls(t *Turn) []ToolCall {
	out := make([]ToolCall, len(t.Calls))
	for i, c := range t.Calls {
		out[i] = c.ToolCall
	}
	return out
}

func admitAppendContext(s *State, c AppendContext) (Admission, error) {
	if err := idleAndOpen(s); err != nil {
		return Admission{}, err
	}
	if len(c.Entries) == 0 {
		return Admission{}, reject(RejectInvalidInput, "no entries to append")
	}
	source := c.Source
	switch source {
	case "":
		source = SourceAPI
	case SourceAPI, SourceRuntime:
	default:
		return Admission{}, reject(RejectInvalidInput, "context source %q is not %s or %s", c.Source, SourceAPI, SourceRuntime)
	}
	entries := make([]EntryInput, len(c.Entries))
	for i, in := range c.Entries {
		if err := validRef(in); err != nil {
			return Admission{}, err
		}
		if in.Scope != "" {
			return Admission{}, reject(RejectInvalidInput, "entries[%d] has scope %q; run-scoped entries come only with a run", i, in.Scope)
		}
		if in.CallID != "" || in.ToolName != "" {
			return Admission{}, reject(RejectInvalidInput, "entries[%d] names a tool call; tool entries come only from runs", i)
		}
		switch in.Kind {
		case EntryMessage:
			if in.Role == "" {
				in.Role = RoleUser
			}
			if in.Role != RoleUser && in.Role != RoleAssistant {
				return Admission{}, reject(RejectInvalidInput, "message role %q is not user or assistant", in.Role)
			}
			for _, ns := range []string{InstructionKeyPrefix, CatalogKeyPrefix, SkillKeyPrefix} {
				if strings.HasPrefix(in.Key, ns) {
					return Admission{}, reject(RejectInvalidInput, "key %q is in the %q namespace; messages may not use it", in.Key, ns)
				}
			}
		case EntryInstructions:
			if err := keyUnder(in, InstructionKeyPrefix); err != nil {
				return Admission{}, err
			}
		case EntryCatalog:
			if err := keyUnder(in, CatalogKeyPrefix); err != nil {
				return Admission{}, err
			}
		case EntrySkillActivation:
			if err := keyUnder(in, SkillKeyPrefix); err != nil {
				return Admission{}, err
			}
		default:
			return Admission{}, reject(RejectInvalidInput, "entry kind %q cannot be appended to context (use message, instructions, catalog or skill_activation)", in.Kind)
		}
		if RefreshManaged(in.Key) && source != SourceRuntime {
			return Admission{}, reject(RejectInvalidInput, "key %q is derived from linked files; only the runtime's refresh writes it", in.Key)
		}
		if cur, ok := s.EntryByKey(in.Key); in.Key != "" && ok && cur.Kind != in.Kind {
			return Admission{}, reject(RejectInvalidInput, "key %q belongs to a %s entry; a keyed entry replaces only one of its own kind", in.Key, cur.Kind)
		}
		entries[i] = in
	}
	// An edit that would change nothing is a no-op, decided before the
	// revision check: a client retrying an edit that landed gets the ids it
	// got the first time, with the revision its stale expectedRevision
	// would otherwise conflict with, and moves nothing.
	if ids, ok := unchangedKeyed(s, entries, source); ok && !c.AppendUnchanged {
		return Admission{EntryIDs: ids, Duplicate: true}, nil
	}
	if c.ExpectedRevision != nil && *c.ExpectedRevision != s.Revision {
		return Admission{}, revisionConflict(*c.ExpectedRevision, s.Revision)
	}
	b := s.newBatch(c.AtMs)
	b.entries(entries, source, "", nil)
	return Admission{Proposals: b.props}, nil
}

// unchangedKeyed returns the ids of the active entries an append would
// leave as they are: every entry is keyed, and the active entry under its
// key has the same kind, role, content, preview, origin, provenance and
// source, and no run. Unkeyed entries are always new: two equal messages
// are two messages.
func unchangedKeyed(s *State, entries []EntryInput, source string) ([]string, bool) {
	ids := make([]string, len(entries))
	for i, in := range entries {
		cur, ok := s.EntryByKey(in.Key)
		if in.Key == "" || !ok || !sameEntry(cur, in, source) {
			return nil, false
		}
		ids[i] = cur.ID
	}
	return ids, true
}

// sameEntry reports whether appending in (validated, by source) would add
// exactly what cur already holds. The token estimate is not compared: it is
// derived from the content.
func sameEntry(cur Entry, in EntryInput, source string) bool {
	provenance := cur.ProvenanceRef == nil && in.ProvenanceRef == nil ||
		cur.ProvenanceRef != nil && in.ProvenanceRef != nil && *cur.ProvenanceRef == *in.ProvenanceRef
	return cur.Kind == in.Kind && cur.Role == in.Role && cur.Content == in.Content && cur.Preview == in.Preview &&
		cur.Origin == in.Origin && provenance && cur.Source == source && cur.RunID == "" && cur.Scope == "" &&
		in.Scope == "" && cur.CallID == in.CallID && cur.ToolName == in.ToolName
}

// keyUnder requires a keyed entry's key to be in its kind's namespace.
func keyUnder(in EntryInput, prefix string) error {
	if !strings.HasPrefix(in.Key, prefix) || len(in.Key) == len(prefix) {
		return reject(RejectInvalidInput, "%s entries need a key under %q, got %q", in.Kind, prefix, in.Key)
	}
	return nil
}

func hasKind(entries []EntryInput, kind string) bool {
	for _, e := range entries {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

func admitRemoveContext(s *State, c RemoveContext) (Admission, error) {
	if err := idleAndOpen(s); err != nil {
		return Admission{}, err
	}
	if c.ExpectedRevision != nil && *c.ExpectedRevision != s.Revision {
		return Admission{}, revisionConflict(*c.ExpectedRevision, s.Revision)
	}
	if len(c.Keys) == 0 && len(c.EntryIDs) == 0 {
		return Admission{}, reject(RejectInvalidInput, "nothing to remove: give keys or entry ids")
	}
	for _, k := range c.Keys {
		if _, ok := s.EntryByKey(k); !ok {
			return Admission{}, reject(RejectUnknownReference, "no active entry has key %q", k)
		}
	}
	for _, id := range c.EntryIDs {
		if _, ok := s.EntryByID(id); !ok {
			return Admission{}, reject(RejectUnknownReference, "no active entry has id %q", id)
		}
	}
	if err := keepsToolPairs(s, c.Keys, c.EntryIDs); err != nil {
		return Admission{}, err
	}
	b := s.newBatch(c.AtMs)
	if len(c.Keys) > 0 {
		b.add(KindContextKeysRemoved, nil, ContextKeysRemoved{BaseRevision: b.rev, Keys: c.Keys})
		b.rev++
	}
	if len(c.EntryIDs) > 0 {
		b.add(KindContextEntriesRemoved, nil, ContextEntriesRemoved{BaseRevision: b.rev, EntryIDs: c.EntryIDs})
		b.rev++
	}
	return Admission{Proposals: b.props}, nil
}

// keepsToolPairs rejects a removal that would leave a tool call without its
// result (or a result without its call) in context: both halves of a call
// must be removed together.
func keepsToolPairs(s *State, keys, ids []string) error {
	removed := func(e Entry) bool { return contains(ids, e.ID) || e.Key != "" && contains(keys, e.Key) }
	for _, e := range s.entries {
		if !removed(e) || e.CallID == "" || (e.Kind != EntryToolCall && e.Kind != EntryToolResult) {
			continue
		}
		for _, other := range s.entries {
			if other.CallID == e.CallID && (other.Kind == EntryToolCall || other.Kind == EntryToolResult) && !removed(other) {
				return reject(RejectInvalidInput, "entry %s is part of tool call %s; remove entry %s with it", e.ID, e.CallID, other.ID)
			}
		}
	}
	return nil
}

// openTurn returns the active run's open turn if it is (runID, turn).
func openTurn(s *State, runID string, turn int) (*Run, *Turn, error) {
	r := s.ActiveRun()
	if r == nil || r.ID != runID || r.Turn == nil || r.Turn.N != turn || r.Turn.Completed {
		return nil, nil, reject(RejectStaleResult, "run %s turn %d is not open", runID, turn)
	}
	return r, r.Turn, nil
}

func admitGeneration(s *State, c GenerationResult) (Admission, error) {
	r, t, err := openTurn(s, c.RunID, c.Turn)
	if err != nil {
		return Admission{}, err
	}
	if !t.GenRequested || t.GenCompleted {
		return Admission{}, reject(RejectStaleResult, "run %s turn %d has no generation in flight", c.RunID, c.Turn)
	}
	entries, calls := append([]EntryInput(nil), c.Entries...), c.ToolCalls
	if c.Failure != nil {
		// A failed generation ends the run; tool calls it may carry would
		// lack results in context, so they are not admitted.
		entries, calls = withoutKind(entries, EntryToolCall), nil
	}
	for _, e := range entries {
		if err := validRef(e); err != nil {
			return Admission{}, err
		}
		// A tool_call entry must belong to an admitted call, or it would sit
		// in context without a result.
		if e.Kind == EntryToolCall && !hasCall(calls, e.CallID) {
			return Admission{}, reject(RejectInvalidInput, "tool_call entry for call %q that the result does not list", e.CallID)
		}
	}
	if c.Failure != nil && c.Failure.Ref != nil {
		if err := c.Failure.Ref.Validate(); err != nil {
			return Admission{}, reject(RejectInvalidInput, "failure ref: %v", err)
		}
	}
	for i, call := range calls {
		if call.CallID == "" || call.Name == "" {
			return Admission{}, reject(RejectInvalidInput, "tool call %d lacks an id or name", i)
		}
		if err := call.Arguments.Validate(); err != nil {
			return Admission{}, reject(RejectInvalidInput, "tool call %s arguments: %v", call.CallID, err)
		}
		for _, prev := range calls[:i] {
			if prev.CallID == call.CallID {
				return Admission{}, reject(RejectInvalidInput, "tool call id %s appears twice", call.CallID)
			}
		}
	}
	if err := c.Cache.validate(); err != nil {
		return Admission{}, err
	}
	joins := turnJoins(r.ID, t.N)
	b := s.newBatch(c.AtMs)
	b.add(KindTurnGenerationCompleted, joins, TurnGenerationCompleted{RunID: r.ID, Turn: t.N, Finish: c.Finish, ResponseID: c.ResponseID, Usage: c.Usage, ToolCalls: calls, Failure: c.Failure, Cache: c.Cache})
	for i := range entries {
		entries[i].Key, entries[i].Scope = "", ""
	}
	if hasKind(entries, EntryCompaction) {
		// The provider compacted the request it was sent: its compaction
		// material stands in for the conversation before it, which is pruned.
		var pruned []string
		for _, e := range s.Compactable() {
			pruned = append(pruned, e.ID)
		}
		if len(pruned) > 0 {
			b.compacted("", TriggerProvider, pruned, nil)
		}
	}
	b.entries(entries, SourceModel, r.ID, joins)
	switch {
	case c.Failure != nil:
		b.add(KindTurnCompleted, joins, TurnCompleted{RunID: r.ID, Turn: t.N, Outcome: TurnOutcomeFailed})
		b.endRun(r.ID, KindRunFailed, RunFailed{RunID: r.ID, Error: *c.Failure})
	case len(calls) > 0:
		ids := make([]string, len(calls))
		for i, call := range calls {
			ids[i] = call.CallID
		}
		b.add(KindToolBatchStarted, joins, ToolBatchStarted{RunID: r.ID, Turn: t.N, CallIDs: ids})
		open := 0
		for _, call := range calls {
			b.add(KindToolCallStarted, callJoins(r.ID, t.N, call.CallID), ToolCallStarted{RunID: r.ID, Turn: t.N, CallID: call.CallID, Name: call.Name, Arguments: call.Arguments})
			grant, granted := s.Config.grantFor(call.Name)
			if !granted {
				completeCall(b, r.ID, t.N, call, CallUnavailable, constantResult(ContentRefBytes{ToolUnavailableRef, ToolUnavailableBytes}, "unavailable"))
				continue
			}
			switch {
			case s.Config.needsApproval(grant):
				b.add(KindToolApprovalRequested, callJoins(r.ID, t.N, call.CallID), ToolApprovalRequested{RunID: r.ID, Turn: t.N, CallID: call.CallID, Name: call.Name})
			case s.Config.clientTool(call.Name) != nil:
				b.add(KindToolCallAwaiting, callJoins(r.ID, t.N, call.CallID), ToolCallAwaiting{RunID: r.ID, Turn: t.N, CallID: call.CallID, Name: call.Name})
			}
			open++
		}
		if open == 0 {
			applyResults(b, r.ID, t.N, calls, nil)
			b.add(KindToolBatchCompleted, joins, ToolBatchCompleted{RunID: r.ID, Turn: t.N})
			b.add(KindTurnCompleted, joins, TurnCompleted{RunID: r.ID, Turn: t.N, Outcome: TurnOutcomeToolCalls})
		}
	default:
		b.add(KindTurnCompleted, joins, TurnCompleted{RunID: r.ID, Turn: t.N, Outcome: TurnOutcomeAnswered})
	}
	return Admission{RunID: r.ID, Status: StatusRunning, Proposals: b.props}, nil
}

func hasCall(calls []ToolCall, id string) bool {
	for _, c := range calls {
		if c.CallID == id {
			return true
		}
	}
	return false
}

func withoutKind(in []EntryInput, kind string) []EntryInput {
	var out []EntryInput
	for _, e := range in {
		if e.Kind != kind {
			out = append(out, e)
		}
	}
	return out
}

func admitToolResult(s *State, c ToolResult) (Admission, error) {
	r, t, err := openTurn(s, c.RunID, c.Turn)
	if err != nil {
		return Admission{}, err
	}
	call := t.call(c.CallID)
	// A call that waits for a decision has run nowhere; one that waits for
	// the client is answered by the client alone.
	if call == nil || !call.Started || call.Completed || call.Awaiting != c.client || call.Approval == ApprovalPending {
		return Admission{}, reject(RejectStaleResult, "call %s of run %s turn %d is not open", c.CallID, c.RunID, c.Turn)
	}
	switch c.Status {
	case CallOK, CallError, CallFailed, CallUnavailable:
	default:
		return Admission{}, reject(RejectInvalidInput, "tool result status %q is not one of ok, error, failed, unavailable", c.Status)
	}
	if err := validRef(c.Result); err != nil {
		return Admission{}, err
	}
	b := s.newBatch(c.AtMs)
	completeCall(b, r.ID, t.N, call.ToolCall, c.Status, c.Result)
	endBatchIfDone(b, r, t, call.CallID)
	return Admission{RunID: r.ID, Status: StatusRunning, Proposals: b.props}, nil
}

// endBatchIfDone ends t's batch, and its turn, when done was its last open
// call (b has just completed it).
func endBatchIfDone(b *batch, r *Run, t *Turn, done string) {
	for _, other := range t.Calls {
		if !other.Completed && other.CallID != done {
			return
		}
	}
	joins := turnJoins(r.ID, t.N)
	applyResults(b, r.ID, t.N, turnCalls(t), t)
	b.add(KindToolBatchCompleted, joins, ToolBatchCompleted{RunID: r.ID, Turn: t.N})
	b.add(KindTurnCompleted, joins, TurnCompleted{RunID: r.ID, Turn: t.N, Outcome: TurnOutcomeToolCalls})
}
