package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/vfs"
	"github.com/cairn-agents/cairn/view"
)

// Limits of reads.
const (
	defaultEventLimit = 100
	maxEventLimit     = 1000
	// A page of session/context/read: entries are about the size of events.
	defaultContextLimit = 100
	maxContextLimit     = 1000
	maxWait             = 30 * time.Second
	maxSessionList      = 1000
)

func routes() map[string]method {
	m := map[string]method{
		MethodSessionCreate:    handler(call.createSession).errs("invalid_configuration", "invalid_input", "session_exists", "unknown_reference", KindMissingBlob),
		MethodSessionRead:      handler(call.readSession).session(),
		MethodSessionList:      handler(call.listSessions),
		MethodRunsStart:        handler(call.startRun).session("duplicate_submission", KindMissingBlob, "session_closed", "transcription_not_configured", "unknown_reference", "invalid_input", "compaction_pending", core.RejectContextWindowExceeded),
		MethodRunsRead:         handler(call.readRun).session("unknown_reference"),
		MethodRunsList:         handler(call.listRuns).session(),
		MethodRunsSteer:        handler(call.steer).session("no_active_run", "invalid_input", KindMissingBlob, "session_closed", "duplicate_submission"),
		MethodRunsCancel:       handler(call.cancelRun).session("unknown_reference", "no_active_run"),
		MethodEventsRead:       handler(call.readEvents).session(),
		MethodContextRead:      handler(call.readContext).session(),
		MethodContextAppend:    handler(call.appendContext).session("active_work", "invalid_input", KindMissingBlob, "revision_conflict", "session_closed", "compaction_pending"),
		MethodContextRemove:    handler(call.removeContext).session("active_work", "revision_conflict", "unknown_reference", "session_closed", "compaction_pending"),
		MethodContextDiff:      handler(call.diffContext).session("unknown_reference"),
		MethodBlobsPut:         handler(call.putBlob).errs(KindLimitExceeded),
		MethodBlobsRead:        handler(call.readBlob).errs(KindNotFound),
		MethodContextCompact:   handler(call.compactContext).session("active_work", "compaction_pending", "session_closed", "invalid_input", KindUnsupported),
		MethodSkillsActivate:   handler(call.activateSkill).session("unknown_reference", "active_work", "revision_conflict", "session_closed", KindMissingBlob),
		MethodSkillsDeactivate: handler(call.deactivateSkill).session("unknown_reference", "active_work", "revision_conflict", "session_closed"),
		MethodTranscriptRead:   handler(call.readTranscript).session(),
		MethodCacheReport:      handler(call.cacheReport).session(),
		MethodDiscover:         handler(call.discover),
	}
	maps.Copy(m, vfsRoutes())
	maps.Copy(m, forkRoutes())
	maps.Copy(m, retentionRoutes())
	maps.Copy(m, storageRoutes())
	maps.Copy(m, clientToolRoutes())
	maps.Copy(m, approvalRoutes())
	maps.Copy(m, runRetryRoutes())
	maps.Copy(m, sessionUpdateRoutes())
	return m
}

// call is one request's view of the server: the host of the universe the
// request is authorised for.
type call struct {
	*Server
	host Host
}

// handler adapts a typed method to the generic signature and keeps its
// types for the method's schema.
func handler[P any, R any](f func(call, context.Context, P) (R, error)) method {
	return method{
		call: func(c call, ctx context.Context, raw json.RawMessage) (any, error) {
			var p P
			if err := decodeParams(raw, &p); err != nil {
				return nil, err
			}
			return f(c, ctx, p)
		},
		params: reflect.TypeFor[P](), result: reflect.TypeFor[R](),
	}
}

func requireSession(id string) error {
	if id == "" {
		return invalidParams("sessionId is required")
	}
	return nil
}

func (s call) createSession(ctx context.Context, p CreateSessionParams) (CreateSessionResult, error) {
	links, err := coreLinks(p.Links)
	if err != nil {
		return CreateSessionResult{}, err
	}
	cfg := core.SessionConfig{Model: p.Model, Tools: p.Tools, ClientTools: p.ClientTools, Approvals: coreApprovals(p.Approvals), MaxTurns: p.MaxTurns, ProviderParams: p.ProviderParams, Links: links, Compaction: p.Compaction,
		Transcription: p.Transcription}
	if err := s.checkConfig(ctx, cfg); err != nil {
		return CreateSessionResult{}, err
	}
	if p.SessionID != "" {
		// Refused before the instructions are stored: a refused call stores nothing.
		if err := runtime.ValidateSessionID(p.SessionID); err != nil {
			return CreateSessionResult{}, err
		}
		if _, err := s.host.Log().Session(ctx, p.SessionID); err == nil {
			return CreateSessionResult{}, &core.Rejection{Kind: core.RejectSessionExists, Message: "session " + p.SessionID + " already exists"}
		}
	}
	var instr *core.EntryInput
	if p.Instructions != "" {
		var err error
		if instr, err = s.instructionsEntry(ctx, p.Instructions); err != nil {
			return CreateSessionResult{}, err
		}
	}
	id, err := s.host.CreateSession(ctx, p.SessionID, cfg, instr)
	if err != nil {
		return CreateSessionResult{}, err
	}
	return CreateSessionResult{SessionID: id}, nil
}

// checkConfig refuses a session configuration this server cannot run: the
// core's own checks, then its API kinds, tools, MCP servers, providers,
// provider parameters and links. session/create and session/update share it.
func (s call) checkConfig(ctx context.Context, cfg core.SessionConfig) error {
	if err := core.ValidateConfig(cfg); err != nil {
		return err
	}
	if len(cfg.ProviderParams) > 0 {
		err := errors.New("this server accepts no provider parameters")
		if s.validate != nil {
			err = s.validate(cfg.Model.APIKind, cfg.ProviderParams)
		}
		if err != nil {
			return &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: "providerParams: " + err.Error()}
		}
	}
	if !slices.Contains(s.apiKinds, cfg.Model.APIKind) {
		return &core.Rejection{Kind: core.RejectInvalidConfiguration,
			Message: "API kind " + cfg.Model.APIKind + " has no adapter in this server yet; supported: " + strings.Join(s.apiKinds, ", ")}
	}
	if err := checkClientTools(cfg.ClientTools, s.tools); err != nil {
		return err
	}
	if s.tools != nil {
		for i, t := range cfg.Tools {
			if server, _, ok := core.MCPGrant(t); ok {
				if !slices.Contains(s.mcpServers, server) {
					return &core.Rejection{Kind: core.RejectInvalidConfiguration,
						Message: "tools[" + strconv.Itoa(i) + "]: no MCP server " + strconv.Quote(server) + " on this server; configured: " + orNone(s.mcpServers)}
				}
				continue
			}
			if !slices.Contains(s.tools, t) && !slices.ContainsFunc(cfg.ClientTools, func(c ClientTool) bool { return c.Name == t }) {
				return &core.Rejection{Kind: core.RejectInvalidConfiguration,
					Message: "tools[" + strconv.Itoa(i) + "]: no tool " + strconv.Quote(t) + " on this server; it has " + strings.Join(s.tools, ", ")}
			}
		}
	}
	if s.provider != nil {
		if err := s.provider(cfg.Model.ProviderID, cfg.Model.APIKind); err != nil {
			return &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: "model.providerId: " + err.Error()}
		}
	}
	return s.checkLinks(ctx, cfg.Links)
}

// coreLinks are the links of session/create as the core keeps them: a
// snapshot by its digest string.
func coreLinks(links []LinkParam) ([]core.Link, error) {
	var out []core.Link
	for i, l := range links {
		cl := core.Link{Mount: l.Mount, Workspace: l.Workspace}
		if l.Snapshot != nil {
			d, err := snapshotDigest(fmt.Sprintf("links[%d].snapshot", i), l.Snapshot)
			if err != nil {
				return nil, err
			}
			cl.Snapshot = d.String()
		}
		out = append(out, cl)
	}
	return out, nil
}

// LinkParamsOf are a config's links in session/create's shape: a snapshot as
// the ref object vfs/snapshots/create returns.
func LinkParamsOf(links []core.Link) []LinkParam {
	var out []LinkParam
	for _, l := range links {
		p := LinkParam{Mount: l.Mount, Workspace: l.Workspace}
		if d, err := content.ParseDigest(l.Snapshot); err == nil {
			r := RefOf(content.ContentRef{Digest: d, MediaType: vfs.MediaType})
			p.Snapshot = &r
		}
		out = append(out, p)
	}
	return out
}

// checkLinks refuses links to workspaces or snapshots the universe does not
// have; a workspace is resolved to its head only when a file is used.
func (s call) checkLinks(ctx context.Context, links []core.Link) error {
	if len(links) == 0 {
		return nil
	}
	ws := s.host.Files()
	if ws == nil {
		return &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: "this store keeps no workspaces; links are not available"}
	}
	for _, l := range links {
		var err error
		if l.Workspace != "" {
			_, err = ws.Workspace(ctx, l.Workspace)
		} else {
			d, _ := content.ParseDigest(l.Snapshot) // validated by the core
			_, err = ws.Snapshot(ctx, d)
		}
		if errors.Is(err, store.ErrWorkspaceNotFound) || errors.Is(err, store.ErrSnapshotNotFound) {
			return &core.Rejection{Kind: core.RejectUnknownReference, Message: "link at " + l.Mount + ": " + err.Error()}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s call) readSession(ctx context.Context, p SessionParams) (SessionReadResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return SessionReadResult{}, err
	}
	if sh, ok := s.host.(StatusHost); ok {
		return s.withSource(ctx)(sh.SessionStatus(ctx, p.SessionID))
	}
	// A session the host holds is answered from its state, a summary built
	// under the session's lock: decoding the checkpoint costs in proportion
	// to the session's length, this only to its queue.
	if lh, ok := s.host.(LiveHost); ok {
		var out SessionReadResult
		if lh.InspectLive(p.SessionID, func(st *core.State) { out = sessionSummary(st) }) {
			return s.withSource(ctx)(out, nil)
		}
	}
	// Any other comes from its latest checkpoint and the authoritative
	// event tail (a full replay when the checkpoint is unusable), without
	// loading it into the host: a read is not a reason to keep it in memory.
	// A session without unfinished work needs only the checkpoint's head.
	var cps store.Checkpoints
	if ch, ok := s.host.(CheckpointHost); ok {
		cps = ch.Checkpoints()
	}
	sum, ok, err := runtime.LoadSummary(ctx, s.host.Log(), cps, s.host.Blobs(), p.SessionID)
	if err != nil {
		return SessionReadResult{}, err
	}
	if ok {
		return s.withSource(ctx)(settledSummary(sum), nil)
	}
	st, err := runtime.LoadState(ctx, s.host.Log(), cps, s.host.Blobs(), p.SessionID, s.log)
	if err != nil {
		return SessionReadResult{}, err
	}
	return s.withSource(ctx)(sessionSummary(st), nil)
}

// sessionSummary is session/read's answer for a state, whichever way it
// was loaded, so the live and the stored answers cannot drift apart. It
// shares nothing with st, which changes once its lock is released.
func sessionSummary(st *core.State) SessionReadResult {
	out := settledSummary(st.Summary())
	if r := st.ActiveRun(); r != nil {
		out.ActiveRun = &RunSummary{RunID: r.ID, Status: r.ShownStatus()}
	}
	for _, id := range st.Queue {
		out.QueuedRuns = append(out.QueuedRuns, RunSummary{RunID: id, Status: core.StatusQueued})
	}
	if p := st.Compaction; p != nil {
		c := *p
		c.EntryIDs = nil // the ids are in the events; the summary stays small
		out.Compaction = &c
	}
	return out
}

// settledSummary is session/read's answer for a session without a run or
// a compaction under way, from its summary alone.
func settledSummary(sum core.Summary) SessionReadResult {
	out := SessionReadResult{
		SessionID: sum.SessionID, Status: core.SessionStatusOpen, Model: sum.Config.Model, Tools: slices.Clone(sum.Config.Tools),
		ClientTools: slices.Clone(sum.Config.ClientTools), Approvals: ApprovalMap(sum.Config.Approvals), Links: LinkParamsOf(sum.Config.Links),
		ContextRevision: sum.Revision, ConfigRevision: sum.ConfigRevision, Head: sum.Head, QueuedRuns: []RunSummary{}, Parent: sum.Parent,
	}
	if sum.Closed {
		out.Status = core.SessionStatusClosed
	}
	return out
}

func (s call) listSessions(ctx context.Context, p SessionListParams) (SessionListResult, error) {
	out, err := s.listSessionsPage(ctx, p)
	if p.ExcludeChildren {
		out.Sessions = slices.DeleteFunc(out.Sessions, func(l core.Lifecycle) bool { return l.Parent != nil })
	}
	if q := strings.ToLower(strings.TrimSpace(p.Query)); q != "" {
		out.Sessions = slices.DeleteFunc(out.Sessions, func(l core.Lifecycle) bool {
			return !strings.Contains(strings.ToLower(l.SessionID), q) && !strings.Contains(strings.ToLower(l.Title), q)
		})
	}
	return out, err
}

// textInput describes the parts of an input: it admits the refs of its
// audio parts in one batch, and stages its text parts (see submitStaged).
func (s call) textInput(ctx context.Context, parts []InputPart) ([]core.InputItem, staged, error) {
	items, err := s.inputItems(ctx, parts)
	var texts staged
	for _, part := range parts {
		if part.Type == "text" {
			texts = append(texts, []byte(part.Text))
		}
	}
	return items, texts, err
}

func (s call) inputItems(ctx context.Context, parts []InputPart) ([]core.InputItem, error) {
	if len(parts) == 0 {
		return nil, invalidParams("input needs at least one part")
	}
	items := make([]core.InputItem, len(parts))
	var refs []content.Digest
	for i, part := range parts {
		switch part.Type {
		case "audio":
			item, err := audioInput(i, part)
			if err != nil {
				return nil, err
			}
			items[i] = item
			refs = append(refs, item.Content.Digest)
		case "text":
			if part.Text == "" {
				return nil, invalidParams("input[" + strconv.Itoa(i) + "].text is empty")
			}
		default:
			return nil, invalidParams("input[" + strconv.Itoa(i) + "].type must be \"text\" or \"audio\"")
		}
	}
	if err := s.admit(ctx, refs); err != nil {
		return nil, err
	}
	for i, part := range parts {
		if part.Type == "text" {
			items[i] = runtime.TextItem(part.Text)
		}
	}
	return items, nil
}

func (s call) startRun(ctx context.Context, p RunStartParams) (RunStartResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return RunStartResult{}, err
	}
	items, texts, err := s.textInput(ctx, p.Input)
	if err != nil {
		return RunStartResult{}, err
	}
	activations, err := s.runActivations(ctx, p.SessionID, p.Skills)
	if err != nil {
		return RunStartResult{}, err
	}
	window, err := s.contextWindow(ctx, p.SessionID)
	if err != nil {
		return RunStartResult{}, err
	}
	adm, err := s.submitStaged(ctx, p.SessionID, core.StartRun{AtMs: s.host.NowMs(), RunID: s.host.NewID("run_"), SubmissionID: p.SubmissionID, Input: items, Activations: activations, ContextWindow: window}, texts)
	if err != nil {
		return RunStartResult{}, err
	}
	return RunStartResult{RunID: adm.RunID, Status: adm.Status}, nil
}

// contextWindow is the window of the session's model, for the admission
// of a run; 0 when the server knows none.
func (s call) contextWindow(ctx context.Context, sessionID string) (int64, error) {
	if s.window == nil {
		return 0, nil
	}
	var model core.ModelSelection
	var params json.RawMessage
	err := s.host.Inspect(ctx, sessionID, func(st *core.State) {
		model, params = st.Config.Model, slices.Clone(st.Config.ProviderParams)
	})
	if err != nil {
		return 0, err
	}
	return s.window(model, params), nil
}

func (s call) readRun(ctx context.Context, p RunParams) (RunReadResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return RunReadResult{}, err
	}
	var out RunReadResult
	var found bool
	var output *content.ContentRef
	err := s.host.Inspect(ctx, p.SessionID, func(st *core.State) {
		r := st.Run(p.RunID)
		if r == nil {
			return
		}
		found = true
		out = RunReadResult{RunID: r.ID, Status: r.ShownStatus(), Turns: r.Turns, Error: r.Error, RetryOf: r.RetryOf}
		output = r.Output
	})
	if err != nil {
		return RunReadResult{}, err
	}
	if !found {
		return RunReadResult{}, &core.Rejection{Kind: core.RejectUnknownReference, Message: "run " + p.RunID + " not found in session " + p.SessionID}
	}
	if output != nil {
		out.Output = &RunOutput{Ref: *output}
		if view.HasText(*output) {
			v, err := view.ProjectVisible(ctx, s.host.Blobs(), *output)
			if err != nil {
				return RunReadResult{}, err
			}
			out.Output.Text, out.Output.Refusal = &v.Text, v.Refusal
		}
	}
	return out, nil
}

func (s call) steer(ctx context.Context, p SteerParams) (SteerResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return SteerResult{}, err
	}
	items, texts, err := s.textInput(ctx, p.Input)
	if err != nil {
		return SteerResult{}, err
	}
	id := s.host.NewID("st_")
	adm, err := s.submitStaged(ctx, p.SessionID, core.Steer{AtMs: s.host.NowMs(), SteeringID: id, Input: items}, texts)
	if err != nil {
		return SteerResult{}, err
	}
	return SteerResult{RunID: adm.RunID, SteeringID: id}, nil
}

func (s call) cancelRun(ctx context.Context, p RunParams) (RunSummary, error) {
	if err := requireSession(p.SessionID); err != nil {
		return RunSummary{}, err
	}
	if p.RunID == "" {
		return RunSummary{}, invalidParams("runId is required")
	}
	adm, err := s.host.Submit(ctx, p.SessionID, core.CancelRun{AtMs: s.host.NowMs(), RunID: p.RunID})
	if err != nil {
		return RunSummary{}, err
	}
	return RunSummary{RunID: adm.RunID, Status: adm.Status}, nil
}

func (s call) readEvents(ctx context.Context, p EventsReadParams) (EventsReadResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return EventsReadResult{}, err
	}
	if p.After < 0 || p.Limit < 0 || p.WaitMs < 0 {
		return EventsReadResult{}, invalidParams("after, limit and waitMs must not be negative")
	}
	limit := p.Limit
	if limit == 0 {
		limit = defaultEventLimit
	}
	limit = min(limit, maxEventLimit)
	evs, head, err := s.eventsAfter(ctx, p.SessionID, p.After, limit)
	if err != nil {
		return EventsReadResult{}, err
	}
	// A host's change watch (which may cost background work) only for a
	// long-poll that has to wait.
	if len(evs) == 0 && p.WaitMs > 0 {
		wctx, cancel := context.WithTimeout(ctx, min(time.Duration(p.WaitMs)*time.Millisecond, maxWait))
		defer cancel()
		now, changed, err := s.host.Changed(wctx, p.SessionID)
		if err != nil && ctx.Err() == nil && wctx.Err() == nil {
			return EventsReadResult{}, err
		}
		if err == nil && now <= p.After {
			select {
			case <-changed:
			case <-wctx.Done():
			}
		}
		if ctx.Err() != nil {
			return EventsReadResult{}, ctx.Err()
		}
		if evs, head, err = s.eventsAfter(ctx, p.SessionID, p.After, limit); err != nil {
			return EventsReadResult{}, err
		}
	}
	// A page shorter than limit ends at the head; otherwise (or when it is
	// empty, or the session unknown) the log says where the head is,
	// unless the host's memory said it.
	if head == 0 && (len(evs) == 0 || len(evs) == limit) {
		life, err := s.host.Log().Session(ctx, p.SessionID)
		if err != nil {
			return EventsReadResult{}, err
		}
		head = life.Head
	}
	out := EventsReadResult{Events: make([]EventView, len(evs)), Head: head}
	for i, ev := range evs {
		out.Events[i] = EventView{Seq: ev.Seq, Kind: ev.Kind, ObservedAtMs: ev.ObservedAtMs, Joins: ev.Joins, Payload: ev.Payload}
		out.Head = max(out.Head, ev.Seq)
	}
	return out, nil
}

// eventsAfter is a page of the session's events after after: from the
// host's memory when it holds them, with the head, else from the log
// (head 0: not known).
func (s call) eventsAfter(ctx context.Context, sessionID string, after int64, limit int) ([]core.Event, int64, error) {
	if rh, ok := s.host.(RecentHost); ok {
		if evs, head, ok := rh.RecentEvents(sessionID, after, limit); ok {
			return evs, head, nil
		}
	}
	evs, err := s.host.Log().ReadAfter(ctx, sessionID, after, limit)
	return evs, 0, err
}

func (s call) readContext(ctx context.Context, p ContextReadParams) (ContextReadResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return ContextReadResult{}, err
	}
	if p.Limit < 0 || p.Limit > maxContextLimit {
		return ContextReadResult{}, invalidParams("limit must be 0 to " + strconv.Itoa(maxContextLimit) + " (0: " + strconv.Itoa(defaultContextLimit) + ")")
	}
	if p.AtSeq != nil {
		return s.readContextAt(ctx, p, *p.AtSeq)
	}
	var out ContextReadResult
	var err error
	if ierr := s.host.Inspect(ctx, p.SessionID, func(st *core.State) { out, err = contextPage(st, p) }); ierr != nil {
		return ContextReadResult{}, ierr
	}
	return out, err
}

// contextPage is one page of st's active context, in request order: the
// entries after the entry p.After (from the first without it), at most
// p.Limit of them. The cursor is the last entry's id while more follow.
// An entry id is the cursor, not a position, because it names the same
// entry at every revision: a client paging a context that changes between
// pages sees the revision change, or is told its entry has left.
func contextPage(st *core.State, p ContextReadParams) (ContextReadResult, error) {
	limit := p.Limit
	if limit == 0 {
		limit = defaultContextLimit
	}
	entries := st.Context()
	start := 0
	if p.After != "" {
		i := slices.IndexFunc(entries, func(e core.Entry) bool { return e.ID == p.After })
		if i < 0 {
			return ContextReadResult{}, invalidParams("after: entry " + strconv.Quote(p.After) + " is not in the context at revision " + itoa64(st.Revision) +
				"; a cursor is the entryId of a page's last entry (the context may have changed since: read it again from the start)")
		}
		start = i + 1
	}
	end := min(start+limit, len(entries))
	// A copy of the page alone: the response must not keep the whole
	// context's copy alive.
	out := ContextReadResult{Revision: st.Revision, Entries: append([]core.Entry{}, entries[start:end]...)}
	if end < len(entries) {
		out.Cursor = entries[end-1].ID
	}
	return out, nil
}

func (s call) appendContext(ctx context.Context, p ContextAppendParams) (ContextAppendResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return ContextAppendResult{}, err
	}
	item, texts, err := s.contextContent(ctx, p)
	if err != nil {
		return ContextAppendResult{}, err
	}
	in := core.EntryInput{Key: p.Key, Kind: p.Kind, Content: item.Content, TokenEstimate: item.TokenEstimate, Preview: item.Preview, Origin: "api"}
	if p.Kind == core.EntryMessage {
		in.Role = core.RoleUser
	}
	adm, err := s.submitStaged(ctx, p.SessionID, core.AppendContext{AtMs: s.host.NowMs(), Entries: []core.EntryInput{in}, ExpectedRevision: p.ExpectedRevision}, texts)
	if err != nil {
		return ContextAppendResult{}, err
	}
	if len(adm.EntryIDs) != 1 {
		return ContextAppendResult{}, fmt.Errorf("append admitted %d entries, want 1", len(adm.EntryIDs))
	}
	return ContextAppendResult{Revision: adm.Revision, EntryID: adm.EntryIDs[0]}, nil
}

// contextContent stages an appended entry's text, or admits its ref.
func (s call) contextContent(ctx context.Context, p ContextAppendParams) (core.InputItem, staged, error) {
	if p.Ref == nil && p.Text != "" {
		return runtime.TextItem(p.Text), staged{[]byte(p.Text)}, nil
	}
	item, err := s.refContent(ctx, p)
	return item, nil, err
}

func (s call) refContent(ctx context.Context, p ContextAppendParams) (core.InputItem, error) {
	switch {
	case p.Ref == nil && p.Text == "":
		return core.InputItem{}, invalidParams("text or ref is required")
	case p.Text != "":
		return core.InputItem{}, invalidParams("text and ref are exclusive: send the bytes once, either way")
	case p.Ref.Digest.IsZero():
		return core.InputItem{}, invalidParams("ref.digest is required")
	}
	ref := p.Ref.Ref(content.MediaText)
	if !content.IsText(ref.MediaType) {
		return core.InputItem{}, invalidParams("ref.mediaType " + strconv.Quote(ref.MediaType) + " is not text/*: context entries are text")
	}
	if err := s.admit(ctx, []content.Digest{p.Ref.Digest}); err != nil {
		return core.InputItem{}, err
	}
	// The preview and estimate need the bytes; reading does not renew grace.
	data, err := s.host.Blobs().Get(ctx, p.Ref.Digest)
	if errors.Is(err, blob.ErrNotFound) {
		return core.InputItem{}, &blob.MissingError{Digests: []content.Digest{p.Ref.Digest}}
	}
	if err != nil {
		return core.InputItem{}, err
	}
	if !utf8.Valid(data) {
		return core.InputItem{}, invalidParams("ref " + p.Ref.Digest.String() + " is not UTF-8 text")
	}
	ref.ProviderKind = "" // the entry is the text itself
	return core.InputItem{Content: ref, TokenEstimate: provider.Estimate(data), Preview: provider.Preview(string(data))}, nil
}

func (s call) removeContext(ctx context.Context, p ContextRemoveParams) (ContextRemoveResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return ContextRemoveResult{}, err
	}
	if p.Key == "" {
		return ContextRemoveResult{}, invalidParams("key is required")
	}
	adm, err := s.host.Submit(ctx, p.SessionID, core.RemoveContext{AtMs: s.host.NowMs(), Keys: []string{p.Key}, ExpectedRevision: p.ExpectedRevision})
	if err != nil {
		return ContextRemoveResult{}, err
	}
	return ContextRemoveResult{Revision: adm.Revision}, nil
}

func (s call) putBlob(ctx context.Context, p BlobPutParams) (BlobPutResult, error) {
	// Absent (or null) data is a mistake, not an empty blob: that is "".
	if p.Data == nil {
		return BlobPutResult{}, invalidParams(`data is required: the bytes in base64 ("" for an empty blob)`)
	}
	mt := p.MediaType
	if mt == "" {
		mt = "application/octet-stream"
	}
	if err := content.ValidateMediaType(mt); err != nil {
		return BlobPutResult{}, invalidParams("mediaType: " + err.Error())
	}
	ref, err := blob.PutRef(ctx, s.host.Blobs(), p.Data, mt, "")
	return BlobPutResult{Ref: ref}, err
}

// readBlob answers a blob's bytes from offset, at most length of them (all
// to the end without length). An offset past the end is refused; at the
// end it reads nothing.
func (s call) readBlob(ctx context.Context, p BlobReadParams) (BlobReadResult, error) {
	if p.Ref.IsZero() {
		return BlobReadResult{}, invalidParams("ref is required")
	}
	if p.Offset < 0 || (p.Length != nil && *p.Length < 0) {
		return BlobReadResult{}, invalidParams("offset and length must not be negative")
	}
	data, err := s.host.Blobs().Get(ctx, p.Ref.Digest)
	if err != nil {
		return BlobReadResult{}, err
	}
	size := int64(len(data))
	if p.Offset > size {
		return BlobReadResult{}, invalidParams(fmt.Sprintf("offset %d is past the end of the blob (size %d)", p.Offset, size))
	}
	data = data[p.Offset:]
	if p.Length != nil && *p.Length < int64(len(data)) {
		data = data[:*p.Length]
	}
	// Refused before it is encoded: base64 takes 4 bytes for every 3.
	if err := budgetOf(ctx).fits(MethodBlobsRead, 4*((int64(len(data))+2)/3)); err != nil {
		return BlobReadResult{}, err
	}
	return BlobReadResult{Data: data, Size: size}, nil
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// orNone lists names, or says there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
