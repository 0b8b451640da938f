package view

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// The transcript answers "what happened": it pages a session's events and
// projects each one's content for display. It reads one bounded event range
// (ReadBefore or ReadAfter) and the blobs that range's display needs; it
// never replays the log or rebuilds reducer state.
//
// A transcript event is the raw event (seq, kind, observedAtMs, joins,
// payload, as in session/events/read) plus, for the kinds a reader cares
// about, a display object derived from the retained bytes at read time:
//
//	{"seq": 7, "kind": "context.entries_applied", "observedAtMs": …, "joins": […], "payload": {…},
//	 "display": {"kind": "entries", "entries": [
//	   {"entryId": "e3", "kind": "message", "role": "assistant", "source": "model",
//	    "ref": "sha256:…", "mediaType": "application/json", "providerKind": "openai.chat.message",
//	    "text": "the full visible text"},
//	   {"entryId": "e5", "kind": "tool_result", "source": "tool", "callId": "c1", "toolName": "vfs_read",
//	    "ref": "sha256:…", "mediaType": "text/plain; charset=utf-8", "preview": "at most 280 bytes…"},
//	   {"entryId": "e6", "kind": "message", "role": "user", "source": "user",
//	    "ref": "sha256:…", "mediaType": "image/png"}]}}
//
// Content is shown one of three ways, always with its ref and media type:
// "text" (full visible text: messages, visible reasoning, summaries, run
// input and run output), "preview" (at most core.MaxPreviewBytes: tool
// arguments and results, instructions, catalogs, skills, provider-opaque
// items; the full bytes stay readable through blobs/read), or neither, for
// media without a text form.

// Transcript page bounds.
const (
	DefaultTranscriptLimit = 50
	MaxTranscriptLimit     = 500
)

// TranscriptQuery selects a page. With neither Before nor After it reads the
// latest events, backward from the head it captures. Before (> 0) is the
// exclusive cursor of an earlier page. After, when set, reads forward from
// that seq (events After+1…). Limit is 0 (DefaultTranscriptLimit) to
// MaxTranscriptLimit.
type TranscriptQuery struct {
	Before int64
	After  *int64
	Limit  int
}

// QueryError is an invalid TranscriptQuery.
type QueryError struct{ Msg string }

func (e *QueryError) Error() string { return e.Msg }

// TranscriptPage is one page of events in chronological order.
type TranscriptPage struct {
	Events []TranscriptEvent `json:"events"`
	// Head is the session head captured by a read without Before (the latest
	// page, or a forward read, where it is at least the last event's seq).
	// A page read with Before has none: loading older history never moves
	// the head a client follows from.
	Head int64 `json:"head,omitempty"`
	// Cursor, when set, is Before for the next earlier page; it is absent
	// once seq 1 has been returned, and on forward reads.
	Cursor int64 `json:"cursor,omitempty"`
}

// TranscriptEvent is a stored event with its display projection.
type TranscriptEvent struct {
	Seq          int64           `json:"seq"`
	Kind         string          `json:"kind"`
	ObservedAtMs int64           `json:"observedAtMs"`
	Joins        []string        `json:"joins,omitempty"`
	Payload      json.RawMessage `json:"payload"`
	// Display is absent for events with nothing to show (session and turn
	// bookkeeping) and for versions this view does not know.
	Display *Display `json:"display,omitempty"`
}

// Display kinds, with the event kinds they show and the fields they set.
const (
	DisplayEntries             = "entries"              // context.entries_applied: entries
	DisplayInput               = "input"                // run.accepted: runId, input
	DisplaySteering            = "steering"             // run.steering_accepted: runId, steeringId, input
	DisplayToolCall            = "tool_call"            // tools.call_started: runId, callId, name, content (arguments, preview); childSessionId for agent_run
	DisplayToolResult          = "tool_result"          // tools.call_completed: runId, callId, status, content (result, preview)
	DisplayToolAwaiting        = "tool_awaiting"        // tools.call_awaiting: runId, callId, name (the client runs it)
	DisplayApprovalRequested   = "approval_requested"   // tools.approval_requested: runId, callId, name
	DisplayApprovalDecided     = "approval_decided"     // tools.approval_decided: runId, callId, status (approved or denied), reason
	DisplayOutput              = "output"               // run.completed: runId, content (output, full text) when there is one
	DisplayFailure             = "failure"              // run.failed (runId), compaction.failed (compactionId): failure
	DisplayCancelRequested     = "cancel_requested"     // run.cancel_requested: runId, reason
	DisplayCancelled           = "cancelled"            // run.cancelled: runId
	DisplayCompactionRequested = "compaction_requested" // compaction.requested: compactionId, trigger, entryIds, count, estimatedTokens
	DisplayCompacted           = "compacted"            // context.compacted: compactionId, trigger, removedEntryIds, count, entries (the replacement)
	DisplayRemoved             = "removed"              // context.entries_removed: removedEntryIds, count; context.keys_removed: removedKeys, count
	DisplayWarning             = "warning"              // session.warning: source, message
)

// Display is an event's content projected for a reader. Kind says which of
// the other fields are set (see the Display* constants).
type Display struct {
	Kind         string `json:"kind"`
	RunID        string `json:"runId,omitempty"`
	SteeringID   string `json:"steeringId,omitempty"`
	CompactionID string `json:"compactionId,omitempty"`
	Trigger      string `json:"trigger,omitempty"`
	CallID       string `json:"callId,omitempty"`
	Name         string `json:"name,omitempty"`
	Status       string `json:"status,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Source       string `json:"source,omitempty"`
	// ChildSessionID is the session an agent_run call starts.
	ChildSessionID  string            `json:"childSessionId,omitempty"`
	Message         string            `json:"message,omitempty"`
	Input           []Content         `json:"input,omitempty"`
	Content         *Content          `json:"content,omitempty"`
	Failure         *core.Failure     `json:"failure,omitempty"`
	EntryIDs        []string          `json:"entryIds,omitempty"`
	RemovedEntryIDs []string          `json:"removedEntryIds,omitempty"`
	RemovedKeys     []string          `json:"removedKeys,omitempty"`
	Count           int               `json:"count,omitempty"`
	EstimatedTokens int64             `json:"estimatedTokens,omitempty"`
	Entries         []TranscriptEntry `json:"entries,omitempty"`
}

// Content is stored content as shown: its ref (the shape every API result
// gives a ref), and Text (the full visible text) or Preview (bounded), or
// neither for media.
type Content struct {
	Ref  content.ContentRef `json:"ref"`
	Text *string            `json:"text,omitempty"`
	// Refusal marks Text as the model's refusal (see Visible).
	Refusal bool   `json:"refusal,omitempty"`
	Preview string `json:"preview,omitempty"`
}

// IsMedia reports whether the content is shown by ref and media type alone.
func (c Content) IsMedia() bool { return !textual(c.Ref.MediaType, c.Ref.ProviderKind) }

// TranscriptEntry is a context entry as shown; its content fields are inline.
type TranscriptEntry struct {
	EntryID  string `json:"entryId"`
	Kind     string `json:"kind"`
	Role     string `json:"role,omitempty"`
	Key      string `json:"key,omitempty"`
	Source   string `json:"source,omitempty"`
	CallID   string `json:"callId,omitempty"`
	ToolName string `json:"toolName,omitempty"`
	Content
}

// ReadTranscript reads one transcript page of a session. An unknown session
// is the log's store.ErrSessionNotFound; an invalid query is a *QueryError;
// a page whose range lacks an event (a seq missing between its bounds, or
// below a head it must reach) is a *runtime.HistoryIncompleteError.
func ReadTranscript(ctx context.Context, log store.SessionLog, blobs BlobReader, sessionID string, q TranscriptQuery) (TranscriptPage, error) {
	if q.Limit < 0 || q.Limit > MaxTranscriptLimit {
		return TranscriptPage{}, &QueryError{fmt.Sprintf("limit must be 0 to %d (0: %d)", MaxTranscriptLimit, DefaultTranscriptLimit)}
	}
	if q.Before < 0 || (q.After != nil && *q.After < 0) {
		return TranscriptPage{}, &QueryError{"before and after must not be negative"}
	}
	if q.Before > 0 && q.After != nil {
		return TranscriptPage{}, &QueryError{"before and after exclude each other: before pages back through history, after follows forward"}
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultTranscriptLimit
	}
	var page TranscriptPage
	var evs []core.Event
	switch {
	case q.After != nil:
		lc, err := log.Session(ctx, sessionID)
		if err != nil {
			return TranscriptPage{}, err
		}
		if evs, err = log.ReadAfter(ctx, sessionID, *q.After, limit); err != nil {
			return TranscriptPage{}, err
		}
		if err := completeAfter(sessionID, evs, *q.After, limit, lc.Head); err != nil {
			return TranscriptPage{}, err
		}
		page.Head = lc.Head
		if n := len(evs); n > 0 {
			page.Head = max(page.Head, evs[n-1].Seq)
		}
	case q.Before > 0:
		var err error
		if evs, err = log.ReadBefore(ctx, sessionID, q.Before, limit); err != nil {
			return TranscriptPage{}, err
		}
		// A page that ends right below the cursor is checked as it is. One
		// that ends earlier has a cursor past the head, or lacks events:
		// capture the head, then read again, so every event up to that head
		// must be there.
		top := q.Before - 1
		if n := len(evs); n == 0 || evs[n-1].Seq < top {
			lc, err := log.Session(ctx, sessionID)
			if err != nil {
				return TranscriptPage{}, err
			}
			if evs, err = log.ReadBefore(ctx, sessionID, q.Before, limit); err != nil {
				return TranscriptPage{}, err
			}
			top = min(top, lc.Head)
		}
		if err := completeBefore(sessionID, evs, top, limit); err != nil {
			return TranscriptPage{}, err
		}
	default:
		lc, err := log.Session(ctx, sessionID)
		if err != nil {
			return TranscriptPage{}, err
		}
		// Everything up to the captured head is immutable, so reading below
		// head+1 returns exactly the page as of the capture.
		if evs, err = log.ReadBefore(ctx, sessionID, lc.Head+1, limit); err != nil {
			return TranscriptPage{}, err
		}
		if err := completeBefore(sessionID, evs, lc.Head, limit); err != nil {
			return TranscriptPage{}, err
		}
		page.Head = lc.Head
	}
	if q.After == nil && len(evs) > 0 && evs[0].Seq > 1 {
		page.Cursor = evs[0].Seq
	}
	p := projector{blobs: &pageBlobs{inner: blobs}, sessionID: sessionID}
	page.Events = make([]TranscriptEvent, len(evs))
	for i, ev := range evs {
		d, err := p.display(ctx, ev)
		if err != nil {
			return TranscriptPage{}, fmt.Errorf("transcript of %s, seq %d (%s): %w", sessionID, ev.Seq, ev.Kind, err)
		}
		page.Events[i] = TranscriptEvent{Seq: ev.Seq, Kind: ev.Kind, ObservedAtMs: ev.ObservedAtMs, Joins: ev.Joins, Payload: ev.Payload, Display: d}
	}
	return page, nil
}

// completeBefore checks a backward page: it must hold every seq from its
// last one (at least top, which must exist) down to limit events or seq 1.
// Missing events are a *runtime.HistoryIncompleteError, as in session/read,
// never a page with a hole in it.
func completeBefore(sessionID string, evs []core.Event, top int64, limit int) error {
	hi := top
	if n := len(evs); n > 0 {
		hi = max(hi, evs[n-1].Seq)
	}
	return complete(sessionID, evs, max(1, hi-int64(limit)+1), hi)
}

// completeAfter checks a forward page read after a head capture: it must
// hold every seq from after+1 on, up to limit events, and a page cut short
// before the limit must reach the captured head.
func completeAfter(sessionID string, evs []core.Event, after int64, limit int, head int64) error {
	hi := after + int64(limit)
	if len(evs) < limit {
		hi = head
		if n := len(evs); n > 0 {
			hi = max(hi, evs[n-1].Seq)
		}
	}
	return complete(sessionID, evs, after+1, hi)
}

// complete reports the first seq of lo..hi that evs (ascending) lacks.
func complete(sessionID string, evs []core.Event, lo, hi int64) error {
	i := 0
	for i < len(evs) && evs[i].Seq < lo {
		i++
	}
	for want := lo; want <= hi; want++ {
		if i >= len(evs) || evs[i].Seq != want {
			return &runtime.HistoryIncompleteError{SessionID: sessionID, Missing: want, Head: hi}
		}
		i++
	}
	return nil
}

type projector struct {
	blobs     BlobReader
	sessionID string // the session whose events these are
}

func decode[T any](ev core.Event) (T, error) {
	var p T
	err := json.Unmarshal(ev.Payload, &p)
	return p, err
}

// display projects one event; nil when it has nothing to show.
func (p projector) display(ctx context.Context, ev core.Event) (*Display, error) {
	if ev.Version != core.EventVersion {
		return nil, nil
	}
	switch ev.Kind {
	case core.KindContextEntriesApplied:
		pl, err := decode[core.ContextEntriesApplied](ev)
		if err != nil {
			return nil, err
		}
		entries, err := p.entries(ctx, pl.Entries)
		return &Display{Kind: DisplayEntries, Entries: entries}, err
	case core.KindContextCompacted:
		pl, err := decode[core.ContextCompacted](ev)
		if err != nil {
			return nil, err
		}
		entries, err := p.entries(ctx, pl.Entries)
		return &Display{Kind: DisplayCompacted, CompactionID: pl.CompactionID, Trigger: pl.Trigger,
			RemovedEntryIDs: pl.Removed, Count: len(pl.Removed), Entries: entries}, err
	case core.KindContextEntriesRemoved:
		pl, err := decode[core.ContextEntriesRemoved](ev)
		return &Display{Kind: DisplayRemoved, RemovedEntryIDs: pl.EntryIDs, Count: len(pl.EntryIDs)}, err
	case core.KindContextKeysRemoved:
		pl, err := decode[core.ContextKeysRemoved](ev)
		return &Display{Kind: DisplayRemoved, RemovedKeys: pl.Keys, Count: len(pl.Keys)}, err
	case core.KindRunAccepted:
		pl, err := decode[core.RunAccepted](ev)
		if err != nil {
			return nil, err
		}
		in, err := p.input(ctx, pl.Input)
		return &Display{Kind: DisplayInput, RunID: pl.RunID, Input: in}, err
	case core.KindRunSteeringAccepted:
		pl, err := decode[core.RunSteeringAccepted](ev)
		if err != nil {
			return nil, err
		}
		in, err := p.input(ctx, pl.Input)
		return &Display{Kind: DisplaySteering, RunID: pl.RunID, SteeringID: pl.SteeringID, Input: in}, err
	case core.KindToolCallStarted:
		pl, err := decode[core.ToolCallStarted](ev)
		if err != nil {
			return nil, err
		}
		c, err := p.bounded(ctx, pl.Arguments, "")
		d := &Display{Kind: DisplayToolCall, RunID: pl.RunID, CallID: pl.CallID, Name: pl.Name, Content: &c}
		if pl.Name == runtime.AgentRunTool {
			d.ChildSessionID = runtime.ChildSessionID(p.sessionID, pl.CallID)
		}
		return d, err
	case core.KindToolApprovalRequested:
		pl, err := decode[core.ToolApprovalRequested](ev)
		return &Display{Kind: DisplayApprovalRequested, RunID: pl.RunID, CallID: pl.CallID, Name: pl.Name}, err
	case core.KindToolApprovalDecided:
		pl, err := decode[core.ToolApprovalDecided](ev)
		status := core.ApprovalDenied
		if pl.Approved {
			status = core.ApprovalApproved
		}
		return &Display{Kind: DisplayApprovalDecided, RunID: pl.RunID, CallID: pl.CallID, Status: status, Reason: pl.Reason}, err
	case core.KindToolCallAwaiting:
		pl, err := decode[core.ToolCallAwaiting](ev)
		return &Display{Kind: DisplayToolAwaiting, RunID: pl.RunID, CallID: pl.CallID, Name: pl.Name}, err
	case core.KindToolCallCompleted:
		pl, err := decode[core.ToolCallCompleted](ev)
		if err != nil {
			return nil, err
		}
		c, err := p.bounded(ctx, pl.Result, "")
		return &Display{Kind: DisplayToolResult, RunID: pl.RunID, CallID: pl.CallID, Status: pl.Status, Content: &c}, err
	case core.KindRunCompleted:
		pl, err := decode[core.RunCompleted](ev)
		if err != nil {
			return nil, err
		}
		d := &Display{Kind: DisplayOutput, RunID: pl.RunID}
		if pl.Output != nil {
			c, err := p.full(ctx, *pl.Output, "")
			if err != nil {
				return nil, err
			}
			d.Content = &c
		}
		return d, nil
	case core.KindRunFailed:
		pl, err := decode[core.RunFailed](ev)
		return &Display{Kind: DisplayFailure, RunID: pl.RunID, Failure: &pl.Error}, err
	case core.KindCompactionFailed:
		pl, err := decode[core.CompactionFailed](ev)
		return &Display{Kind: DisplayFailure, CompactionID: pl.CompactionID, Failure: &pl.Error}, err
	case core.KindRunCancelRequested:
		pl, err := decode[core.RunCancelRequested](ev)
		return &Display{Kind: DisplayCancelRequested, RunID: pl.RunID, Reason: pl.Reason}, err
	case core.KindRunCancelled:
		pl, err := decode[core.RunCancelled](ev)
		return &Display{Kind: DisplayCancelled, RunID: pl.RunID}, err
	case core.KindSessionWarning:
		pl, err := decode[core.SessionWarning](ev)
		return &Display{Kind: DisplayWarning, Source: pl.Source, Message: pl.Message}, err
	case core.KindCompactionRequested:
		pl, err := decode[core.CompactionRequested](ev)
		return &Display{Kind: DisplayCompactionRequested, CompactionID: pl.CompactionID, Trigger: pl.Trigger,
			EntryIDs: pl.EntryIDs, Count: len(pl.EntryIDs), EstimatedTokens: pl.EstimatedTokens}, err
	}
	return nil, nil
}

// fullTextKind reports whether an entry kind is conversation shown in full.
func fullTextKind(kind string) bool {
	return kind == core.EntryMessage || kind == core.EntryReasoning || kind == core.EntrySummary
}

func (p projector) entries(ctx context.Context, es []core.Entry) ([]TranscriptEntry, error) {
	out := make([]TranscriptEntry, len(es))
	for i, e := range es {
		out[i] = TranscriptEntry{EntryID: e.ID, Kind: e.Kind, Role: e.Role, Key: e.Key, Source: e.Source, CallID: e.CallID, ToolName: e.ToolName}
		var err error
		if fullTextKind(e.Kind) {
			out[i].Content, err = p.full(ctx, e.Content, e.Preview)
		} else {
			out[i].Content, err = p.bounded(ctx, e.Content, e.Preview)
		}
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", e.ID, err)
		}
	}
	return out, nil
}

func (p projector) input(ctx context.Context, items []core.InputItem) ([]Content, error) {
	out := make([]Content, len(items))
	for i, in := range items {
		var err error
		if out[i], err = p.full(ctx, in.Content, in.Preview); err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
	}
	return out, nil
}

func describe(ref content.ContentRef) Content {
	return Content{Ref: ref}
}

// full shows content with a text form as its full visible text, other
// textual content (JSON) as a preview, and media by ref alone.
func (p projector) full(ctx context.Context, ref content.ContentRef, recorded string) (Content, error) {
	if !HasText(ref) {
		return p.bounded(ctx, ref, recorded)
	}
	c := describe(ref)
	v, err := ProjectVisible(ctx, p.blobs, ref)
	if err != nil {
		return Content{}, err
	}
	c.Text, c.Refusal = &v.Text, v.Refusal
	return c, nil
}

// bounded shows content as a preview of at most core.MaxPreviewBytes: the
// start of the bytes for text and JSON, the adapter's recorded preview for
// provider-native material (whose raw encoding is not a display), nothing
// for media.
func (p projector) bounded(ctx context.Context, ref content.ContentRef, recorded string) (Content, error) {
	c := describe(ref)
	switch {
	case !textual(ref.MediaType, ref.ProviderKind):
	case ref.ProviderKind != "", core.IsParts(ref):
		c.Preview = provider.Preview(recorded)
	default:
		data, err := p.blobs.Get(ctx, ref.Digest)
		if err != nil {
			return Content{}, err
		}
		if utf8.Valid(data) {
			c.Preview = provider.Preview(string(data))
		}
	}
	return c, nil
}

// textual reports whether content has a readable form: provider-native
// material, text/*, and JSON.
func textual(mediaType, providerKind string) bool {
	if providerKind != "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(mediaType))
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// pageBlobs remembers the small blobs one page has read, so content shown
// twice (a run's input and the message it becomes) is fetched once.
type pageBlobs struct {
	inner BlobReader
	seen  map[content.Digest][]byte
}

const pageBlobCacheMax = 64 << 10

func (b *pageBlobs) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	if data, ok := b.seen[d]; ok {
		return data, nil
	}
	data, err := b.inner.Get(ctx, d)
	if err != nil {
		return nil, err
	}
	if len(data) <= pageBlobCacheMax {
		if b.seen == nil {
			b.seen = map[content.Digest][]byte{}
		}
		b.seen[d] = data
	}
	return data, nil
}
