// Package provider holds what every API-kind adapter shares: the request an
// executor hands an adapter, the facts an adapter returns, and typed provider
// errors. Adapters keep native bytes in CAS and return only facts and refs.
package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
)

// Tool is a tool definition as presented to the model, in a stable order.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema object
}

// Request is one generation: the frozen context of a planned turn.
type Request struct {
	SessionID string
	Model     core.ModelSelection
	// Entries is the active context in request order (instructions first).
	// With Pieces, an entry must not change at its address once a request
	// was lowered from it (a State's never do: it copies its entries
	// before it changes one): a later request whose entries are at the
	// same addresses takes the pieces lowered from them without comparing
	// them (PieceScope.Prefix).
	Entries []core.Entry
	Tools   []Tool
	// Params are the session's provider parameters for this API kind
	// (canonical JSON, validated by the adapter's ValidateParams at admission).
	Params json.RawMessage
	// Compaction is the session's policy. With mode provider_triggered the
	// Responses adapter asks the provider to compact in this request; native
	// compaction items come back as EntryCompaction entries.
	Compaction *core.Compaction
	// Pieces, when set, keeps lowered entries for the session's later
	// requests (and reuses those of earlier ones). nil lowers everything.
	Pieces *Pieces
	// OnDelta, when set, hears the pieces of a streamed answer as they
	// arrive; they are for showing, never stored.
	OnDelta func(Delta)
}

// Delta kinds: what a piece of a streamed answer adds to.
const (
	DeltaText          = "text"
	DeltaReasoning     = "reasoning"
	DeltaToolArguments = "tool_arguments"
)

// Delta is a piece of a streamed answer. A piece of a tool call's
// arguments says which call it belongs to, once the stream has named it.
type Delta struct {
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	CallID string `json:"callId,omitempty"`
	Name   string `json:"name,omitempty"`
}

// Output is what an adapter returns after writing native material to CAS.
type Output struct {
	// Entries are the new context entries, in the order the provider produced them.
	Entries    []core.EntryInput
	ToolCalls  []core.ToolCall
	Finish     string
	ResponseID string
	Usage      core.Usage
	// Failure is set when the provider ended the turn in a way that fails the
	// run (refusal, output limit); the native bytes are still stored.
	Failure *core.Failure
	// RequestBytes and Segments describe the request the adapter sent (its
	// first, when a turn took several): the body's size, and its cacheable
	// segments in the order providers match prefixes — tools, instructions,
	// then each message, block or item. Digests cover the lowered bytes
	// without per-request cache markers. Both are zero when the adapter does
	// not report them.
	RequestBytes int64
	Segments     []Segment
}

// Segment is one cacheable piece of a lowered request (see core.CacheSegment).
type Segment = core.CacheSegment

// Adapter lowers a request to one API kind's native form, calls the provider,
// stores the native response in CAS and returns facts and refs.
type Adapter interface {
	Generate(ctx context.Context, blobs blob.Store, req Request) (Output, error)
}

// CompactRequest is one standalone compaction: the compactable entries it
// replaces, in request order. Instructions, current catalogs and active
// skills are not among them and are never sent.
type CompactRequest struct {
	SessionID string
	Model     core.ModelSelection
	Entries   []core.Entry
	// Tools are the session's tool definitions: some APIs refuse a history
	// with tool calls unless the tools are defined.
	Tools  []Tool
	Params json.RawMessage
	// TargetTokens guides a summary's length and bounds its output; 0 means
	// the adapter's default. The Responses compact endpoint does not use it.
	TargetTokens int64
}

// CompactOutput is the replacement for the compacted entries.
type CompactOutput struct {
	// Entries replace the compacted ones: a plain-text summary
	// (EntrySummary) or native compaction items (EntryCompaction).
	Entries []core.EntryInput
	Usage   core.Usage
	// Failure is set when the provider answered without a usable
	// replacement (no compaction item, an empty or cut-off summary); the
	// original entries are kept.
	Failure *core.Failure
}

// Compactor is implemented by adapters that can compact their API kind's
// context as standalone work.
type Compactor interface {
	Compact(ctx context.Context, blobs blob.Store, req CompactRequest) (CompactOutput, error)
}

// Error is a classified provider failure. Message never contains credentials.
type Error struct {
	Status     int // HTTP status, 0 for transport errors
	Retryable  bool
	RetryAfter time.Duration // from Retry-After, when the provider sent one
	Message    string
	// Exhausted says a retryable error kept coming until the host's retry
	// budget was spent; Retryable is then false.
	Exhausted bool
}

func (e *Error) Error() string {
	kind := "terminal"
	switch {
	case e.Retryable:
		kind = "retryable"
	case e.Exhausted:
		kind = "retries exhausted"
	}
	if e.Status != 0 {
		return fmt.Sprintf("provider error (%s, HTTP %d): %s", kind, e.Status, e.Message)
	}
	return fmt.Sprintf("provider error (%s): %s", kind, e.Message)
}

// ParamsValidator is implemented by adapters whose API kind takes provider
// parameters; admission calls it before a config with parameters is accepted.
type ParamsValidator interface {
	ValidateParams(params json.RawMessage) error
}
