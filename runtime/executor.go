package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/store"
)

// Executor runs generations, tool calls and refreshes for any host.
type Executor struct {
	Blobs    blob.Store
	Adapters map[string]provider.Adapter // by API kind
	Tools    *Tools
	// Files holds the universe's workspaces; nil means sessions cannot use
	// linked files (their tools report it, refresh derives nothing).
	Files Files
	// Transcriber transcribes audio input; nil means a run with audio
	// fails with a transcription failure.
	Transcriber Transcriber
	// Logger records failures the model only sees as a constant result
	// (a tool that failed at the runtime boundary); nil means slog.Default().
	Logger *slog.Logger
	// Pieces keeps what requests are built from between generations: each
	// adapter's lowered entries and the stored chunks of segment lists
	// (see putSegments). nil lowers every request from its blobs, and
	// reads the session's last segment list back to store the next. One is
	// shared by every session a process or worker serves: it is bounded by
	// bytes, and its keys name the session.
	Pieces *provider.Pieces
	// MCP are the MCP servers sessions may take tools from; nil means none.
	MCP MCPServers
	// Children runs sub-agents (agent_run); nil means the host runs none.
	Children Children
	// Observer hears each provider call and generation (nil: nobody).
	Observer Observer
	// OnDelta hears the pieces of streamed answers as they arrive, for
	// clients to show, between a DeltaBegin and a DeltaEnd mark for each
	// provider attempt; nil means nobody listens.
	OnDelta func(sessionID string, d GenerationDelta)
}

// DefaultPiecesBytes bounds the Pieces a host gives its executors. It
// holds the whole lowered context of the heaviest session the issue 17
// benchmark drives (100 re-reads of a 256 KiB file: 26 MB of tool results
// at turn 100) with room for many short sessions besides. Beyond it the
// least recently used pieces are lowered again from their blobs, which is
// what every turn cost before.
const DefaultPiecesBytes = 64 << 20

func (x *Executor) logger() *slog.Logger {
	if x.Logger == nil {
		return slog.Default()
	}
	return x.Logger
}

// ErrFingerprintMismatch means the context handed to a generation is not the
// one its turn planned: a host bug, never sent to a provider.
var ErrFingerprintMismatch = errors.New("request does not match its planned fingerprint")

// Generate performs one provider attempt for a planned turn. A nil error
// returns the result to admit; a *provider.Error that is Retryable may be
// retried by the host; any other error should become FailedGeneration.
func (x *Executor) Generate(ctx context.Context, sessionID string, w core.GenerateWork) (core.GenerationResult, error) {
	res, _, err := x.generate(ctx, sessionID, w, false)
	return res, err
}

// GenerateHeld is Generate for a host that stores what the answer brings
// with the append that admits the result (store.BatchAppender), which
// then costs no transaction of its own: it returns those blobs and edges
// instead of writing them. An edge names only blobs of the batch, blobs
// stored when GenerateHeld checked, or w.LastSegments, which the
// session's committed events root. The batch is for the same store as
// the executor's Blobs and Files.
func (x *Executor) GenerateHeld(ctx context.Context, sessionID string, w core.GenerateWork) (core.GenerationResult, store.Batch, error) {
	return x.generate(ctx, sessionID, w, true)
}

func (x *Executor) generate(ctx context.Context, sessionID string, w core.GenerateWork, hold bool) (core.GenerationResult, store.Batch, error) {
	matches, cold := x.fingerprintMatches(sessionID, w)
	if !matches {
		return core.GenerationResult{}, store.Batch{}, fmt.Errorf("%w: planned %s, rebuilt %s", ErrFingerprintMismatch, w.Fingerprint, core.PlanFingerprint(w.Config, w.Entries))
	}
	adapter, ok := x.Adapters[w.Config.Model.APIKind]
	if !ok {
		return core.GenerationResult{}, store.Batch{}, fmt.Errorf("no adapter for API kind %q", w.Config.Model.APIKind)
	}
	tools, err := x.toolDefinitions(ctx, w.Config)
	if err != nil {
		return core.GenerationResult{}, store.Batch{}, err
	}
	// What the answer stores waits for the cache-report list's edge, or
	// the flush below, and is written with it in one batch (or, held, is
	// returned as that batch).
	var onDelta func(provider.Delta)
	if x.OnDelta != nil {
		mark := func(kind string) { x.OnDelta(sessionID, GenerationDelta{RunID: w.RunID, Turn: w.Turn, Kind: kind}) }
		mark(DeltaBegin) // a retried attempt's answer starts again
		defer mark(DeltaEnd)
		onDelta = func(d provider.Delta) {
			x.OnDelta(sessionID, GenerationDelta{RunID: w.RunID, Turn: w.Turn, Kind: d.Kind, Text: d.Text, CallID: d.CallID, Name: d.Name})
		}
	}
	var preloaded map[content.Digest][]byte
	if cold {
		preloaded = x.preload(ctx, w.Entries)
	}
	x, writes := x.stage(hold)
	if writes != nil && w.LastSegments != nil {
		writes.rooted = w.LastSegments.Digest
	}
	began := time.Now()
	out, err := adapter.Generate(ctx, blob.Preloaded(x.Blobs, preloaded), provider.Request{
		SessionID:  sessionID,
		Model:      w.Config.Model,
		Entries:    w.Entries,
		Tools:      tools,
		Params:     w.Config.ProviderParams,
		Compaction: w.Config.Compaction,
		Pieces:     x.Pieces,
		OnDelta:    onDelta,
	})
	if x.Observer != nil {
		x.Observer.ProviderCall(ProviderCallInfo{SessionID: sessionID, RunID: w.RunID, Turn: w.Turn, APIKind: w.Config.Model.APIKind,
			ProviderID: w.Config.Model.ProviderID, Start: began, Duration: time.Since(began), Failed: err != nil})
	}
	if err != nil {
		return core.GenerationResult{}, store.Batch{}, err
	}
	res := core.GenerationResult{
		RunID: w.RunID, Turn: w.Turn, Entries: out.Entries, ToolCalls: out.ToolCalls,
		Finish: out.Finish, ResponseID: out.ResponseID, Usage: out.Usage, Failure: out.Failure,
	}
	var prefixFraction float64
	res.Cache, prefixFraction = x.cacheFacts(ctx, sessionID, w, out)
	var held store.Batch
	switch {
	case writes == nil:
	case hold:
		held = writes.Held()
	default:
		if err := writes.Flush(ctx); err != nil {
			return core.GenerationResult{}, store.Batch{}, fmt.Errorf("storing the answer: %w", err)
		}
	}
	if x.Observer != nil { // once the answer is stored or held: a retried generation counts once
		x.Observer.Generated(out.Usage, prefixFraction)
	}
	return res, held, nil
}

// fingerprintMatches checks that w's entries are the request its turn
// planned. x.Pieces keeps the memo of the session's last checked request,
// so a turn hashes only the entries it added. cold reports that it kept
// none: the session's first request here, whose entries nothing lowered.
func (x *Executor) fingerprintMatches(sessionID string, w core.GenerateWork) (ok, cold bool) {
	key := append([]byte("fingerprint\x00"), sessionID...)
	v, _ := x.Pieces.Get(key)
	memo, _ := v.(*core.FingerprintMemo)
	ok, next := core.FingerprintMatches(w.Fingerprint, w.Config, w.Entries, memo)
	if next != memo && next != nil {
		x.Pieces.Put(key, next, int64(len(w.Entries))*fingerprintedBytes)
	}
	return ok, memo == nil
}

// preload reads the blobs of entries a page at a time, for a request
// whose every entry is lowered from its blob: a long session's first turn
// in a process read them one query each (20,000 at 10,000 turns). It
// stops past preloadBytes, so that a context of large blobs is not held
// twice at once; whatever it does not read, the adapter reads itself.
func (x *Executor) preload(ctx context.Context, entries []core.Entry) map[content.Digest][]byte {
	out := map[content.Digest][]byte{}
	var size int
	for page := range slices.Chunk(entries, preloadPage) {
		ds := make([]content.Digest, len(page))
		for i := range page {
			ds[i] = page[i].Content.Digest
		}
		got, err := blob.GetMany(ctx, x.Blobs, ds)
		if err != nil {
			x.logger().Warn("preloading a request's blobs failed; reading them one by one", "entries", len(entries), "error", err)
			return out
		}
		for d, data := range got {
			out[d] = data
			size += len(data)
		}
		if size > preloadBytes {
			break
		}
	}
	return out
}

// preloadPage and preloadBytes bound what preload reads at once and in all.
const (
	preloadPage  = 1000
	preloadBytes = 32 << 20
)

// fingerprintedBytes approximates what a memo keeps per entry.
const fingerprintedBytes = 64

// cacheFacts stores the request's segment list and describes it; nil when
// the adapter reported no segments. The provider has answered by now, so a
// failure to store the list drops the facts rather than the answer (the
// prompt-cache report skips a generation without them). It also returns
// the fraction of the segments' bytes that begin the last request's list
// (-1: no list to compare with), for the metrics.
func (x *Executor) cacheFacts(ctx context.Context, sessionID string, w core.GenerateWork, out provider.Output) (*core.CacheFacts, float64) {
	if len(out.Segments) == 0 {
		return nil, -1
	}
	model := w.Config.Model
	stored, err := x.putSegments(ctx, sessionID, w.LastSegments, out.Segments)
	if err != nil {
		return nil, -1
	}
	fraction := -1.0
	if stored.keep >= 0 && stored.bytes > 0 {
		fraction = float64(stored.keptBytes) / float64(stored.bytes)
	}
	return &core.CacheFacts{ProviderID: model.ProviderID, APIKind: model.APIKind, Model: model.Model, RequestBytes: out.RequestBytes,
		SegmentBytes: stored.bytes, SegmentCount: len(out.Segments), Segments: stored.ref}, fraction
}

// FailedGeneration turns a generation error the host will not retry into the
// result that fails the turn: a terminal provider error keeps the provider's
// message; anything else is a failure at the runtime boundary.
func FailedGeneration(w core.GenerateWork, err error) core.GenerationResult {
	f := core.Failure{Kind: "model_call_failed", Message: "the model call failed at the runtime boundary", Ref: &core.ModelFailedRef}
	var pe *provider.Error
	switch {
	case errors.As(err, &pe):
		f = core.Failure{Kind: "provider_error", Message: pe.Error()}
	case errors.Is(err, endpoint.ErrMissingKey), errors.Is(err, endpoint.ErrUnknownProvider), errors.Is(err, endpoint.ErrConfig):
		// Endpoint errors name what to configure and never carry a secret.
		f = core.Failure{Kind: "endpoint_unavailable", Message: err.Error()}
	}
	return core.GenerationResult{RunID: w.RunID, Turn: w.Turn, Finish: "error", Failure: &f}
}

// InvokeTool runs one call and stores its output. Tool failures become a
// result the model sees (the constant "tool failed" blob); the error returned
// is only for context cancellation, when the result must be discarded.
func (x *Executor) InvokeTool(ctx context.Context, sess ToolSession, runID string, turn int, call core.ToolCall) (core.ToolResult, error) {
	res := core.ToolResult{RunID: runID, Turn: turn, CallID: call.CallID}
	tool, ok := x.Tools.Lookup(call.Name)
	if !ok && sess.MCP == nil {
		res.Status, res.Result = core.CallUnavailable, constantEntry(core.ToolUnavailableRef, core.ToolUnavailableBytes)
		return res, nil
	}
	args, err := x.Blobs.Get(ctx, call.Arguments.Digest)
	if err != nil {
		return res, fmt.Errorf("loading arguments of call %s: %w", call.CallID, err)
	}
	var out ToolOutput
	began := time.Now()
	if sess.MCP != nil {
		out, err = x.invokeMCP(ctx, sess, runID, turn, call, args)
	} else {
		out, err = tool.Invoke(ctx, x.toolEnv(sess, runID, call), args)
	}
	if x.Observer != nil {
		x.Observer.ToolCall(ToolCallInfo{SessionID: sess.ID, RunID: runID, Turn: turn, CallID: call.CallID, Name: call.Name,
			Start: began, Duration: time.Since(began), Failed: err != nil})
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if err != nil {
		// The model and the event log only get the constant "tool failed":
		// this line is the one place the cause is kept. Tool errors name
		// paths and stores, never the call's arguments or credentials.
		x.logger().Error("tool call failed; the model sees the constant tool_failed result", "session", sess.ID, "run", runID, "turn", turn,
			"call", call.CallID, "tool", call.Name, "err", err)
		res.Status, res.Result = core.CallFailed, constantEntry(core.ToolFailedRef, core.ToolFailedBytes)
		return res, nil
	}
	res.Status = core.CallOK
	if out.IsError {
		res.Status = core.CallError
	}
	if len(out.Parts) > 0 {
		if res.Result, err = x.putParts(ctx, out.Parts); err != nil {
			return res, fmt.Errorf("storing result of call %s: %w", call.CallID, err)
		}
		return res, nil
	}
	mt := out.MediaType
	if mt == "" {
		mt = content.MediaText
	}
	ref, err := blob.PutRef(ctx, x.Blobs, out.Content, mt, "")
	if err != nil {
		return res, fmt.Errorf("storing result of call %s: %w", call.CallID, err)
	}
	res.Result = core.EntryInput{Content: ref, TokenEstimate: provider.Estimate(out.Content), Preview: previewOf(out.Content)}
	return res, nil
}

// ToolSession names the session a tool call runs for and the links its
// config mounts at the time of the call; MCP names the MCP tool the call
// is for, nil for any other tool. Config and Depth (its depth among
// sub-agents) are for agent_run; a host that runs no sub-agents may leave
// them out.
type ToolSession struct {
	ID     string
	Links  []core.Link
	MCP    *core.MCPTool
	Config *core.SessionConfig
	Depth  int
	// AgentSlot is how many agent_run calls the model made before this
	// one in the same turn: the calls of a turn run at once.
	AgentSlot int
}

// ToolSessionFor is the ToolSession of a call the session's state lets run.
func ToolSessionFor(st *core.State, call core.ToolCall) ToolSession {
	cfg := st.Config
	s := ToolSession{ID: st.SessionID, Links: cfg.Links}
	if t, ok := cfg.MCPToolFor(call.Name); ok {
		s.MCP = &t
	}
	if call.Name == AgentRunTool {
		s.Config = agentParent(cfg)
		if st.Parent != nil {
			s.Depth = st.Parent.Depth
		}
		if r := st.ActiveRun(); r != nil && r.Turn != nil {
			for _, c := range r.Turn.Calls {
				if c.CallID == call.CallID {
					break
				}
				if c.Name == AgentRunTool {
					s.AgentSlot++
				}
			}
		}
	}
	return s
}

// agentParent is what agent_run needs of its session's config to make a
// child's (childConfig): the model, grants, approvals, links and
// parameters, and the client tools by name only. It crosses into the tool
// activity on Temporal, so it leaves out what can be large (client tools'
// schemas, the MCP catalog).
func agentParent(cfg core.SessionConfig) *core.SessionConfig {
	out := core.SessionConfig{Model: cfg.Model, Tools: cfg.Tools, Approvals: cfg.Approvals, Links: cfg.Links, ProviderParams: cfg.ProviderParams}
	for _, t := range cfg.ClientTools {
		out.ClientTools = append(out.ClientTools, core.ClientTool{Name: t.Name})
	}
	return &out
}

// toolEnv is what a tool may know of the session calling it.
func (x *Executor) toolEnv(sess ToolSession, runID string, call core.ToolCall) ToolEnv {
	env := ToolEnv{SessionID: sess.ID, Files: x.sessionFS(sess.Links)}
	if x.Children != nil && sess.Config != nil {
		env.Agent = &AgentEnv{Parent: core.ParentRef{SessionID: sess.ID, RunID: runID, CallID: call.CallID, Depth: sess.Depth + 1},
			Slot: sess.AgentSlot, Config: *sess.Config, Children: x.Children, Blobs: x.Blobs, Files: x.Files}
	}
	return env
}

func constantEntry(ref content.ContentRef, data []byte) core.EntryInput {
	return core.EntryInput{Content: ref, TokenEstimate: provider.Estimate(data), Preview: previewOf(data)}
}

func previewOf(data []byte) string {
	if !utf8.Valid(data) {
		return fmt.Sprintf("(%d bytes)", len(data))
	}
	return provider.Preview(string(data))
}

// TextInput stores a user's text and describes it as run input.
func TextInput(ctx context.Context, blobs blob.Store, text string) (core.InputItem, error) {
	item := TextItem(text)
	if _, err := blob.PutRef(ctx, blobs, []byte(text), content.MediaText, ""); err != nil {
		return core.InputItem{}, err
	}
	return item, nil
}

// TextItem is TextInput's item without storing the text: for a caller that
// stores the bytes only once the command that names them is admissible.
func TextItem(text string) core.InputItem {
	data := []byte(text)
	return core.InputItem{Content: content.Ref(data, content.MediaText, ""), TokenEstimate: provider.Estimate(data), Preview: provider.Preview(text)}
}
