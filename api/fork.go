package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// Fork and clone methods.
const (
	// MethodSessionFork creates a history fork: a session whose log is the
	// source's events up to a fork point, then its own.
	MethodSessionFork = "session/fork"
	// MethodSessionClone creates a configuration-only clone: a new session
	// opened with the source's current configuration and instructions.
	MethodSessionClone = "session/clone"
)

// Error kinds of forks.
const (
	// KindForkPointInsideRun: the fork point falls inside a run (or a
	// pending compaction) that had not ended there; data.safeSeq is the
	// largest seq at or below it that is not.
	KindForkPointInsideRun = "fork_point_inside_run"
	// KindForkTooDeep: the source is already store.MaxForkDepth forks deep.
	KindForkTooDeep = "fork_too_deep"
)

// SessionForkParams ask for a history fork of SessionID after event AtSeq
// (default: the largest seq at or below the head that no run spans, before
// a final session.closed), under NewSessionID (default: a fresh id).
type SessionForkParams struct {
	SessionID    string `json:"sessionId"`
	AtSeq        *int64 `json:"atSeq,omitempty"`
	NewSessionID string `json:"newSessionId,omitempty"`
	// The fork's configuration changes, as session/update takes them,
	// applied as its first event after the fork point.
	Model          *core.ModelSelection `json:"model,omitempty"`
	Tools          *[]string            `json:"tools,omitempty"`
	Instructions   *string              `json:"instructions,omitempty"`
	ProviderParams json.RawMessage      `json:"providerParams,omitempty"`
	Compaction     *core.Compaction     `json:"compaction,omitempty"`
}

// overrides are the fork's configuration changes; ok is false without any.
func (p SessionForkParams) overrides(sessionID string) (SessionUpdateParams, bool) {
	u := SessionUpdateParams{SessionID: sessionID, Model: p.Model, Tools: p.Tools, Instructions: p.Instructions, ProviderParams: p.ProviderParams, Compaction: p.Compaction}
	return u, u.changes()
}

// SessionForkResult names the fork and its fork point.
type SessionForkResult struct {
	SessionID string `json:"sessionId"`
	AtSeq     int64  `json:"atSeq"`
}

// SessionCloneParams ask for a configuration-only clone of SessionID under
// NewSessionID (default: a fresh id).
type SessionCloneParams struct {
	SessionID    string `json:"sessionId"`
	NewSessionID string `json:"newSessionId,omitempty"`
	// The clone's configuration changes, as session/update takes them.
	Model          *core.ModelSelection `json:"model,omitempty"`
	Tools          *[]string            `json:"tools,omitempty"`
	Instructions   *string              `json:"instructions,omitempty"`
	ProviderParams json.RawMessage      `json:"providerParams,omitempty"`
	Compaction     *core.Compaction     `json:"compaction,omitempty"`
}

// SessionCloneResult names the clone.
type SessionCloneResult struct {
	SessionID string `json:"sessionId"`
}

// SessionSource is a session's lineage as session/read shows it:
// {sessionId, atSeq} for a history fork, {sessionId} for a clone.
type SessionSource = store.Source

// ForkHost is implemented by hosts that create history forks (the local
// host and the Temporal gateway). at is the source's state at the fork
// point; the host may keep it as the fork's first checkpoint.
type ForkHost interface {
	ForkSession(ctx context.Context, req store.ForkRequest, at *core.State) (core.Lifecycle, error)
}

func forkRoutes() map[string]method {
	return map[string]method{
		MethodSessionFork:   handler(call.forkSession).session(KindForkPointInsideRun, KindForkTooDeep, "invalid_input", "session_exists", KindUnsupported, "invalid_configuration"),
		MethodSessionClone:  handler(call.cloneSession).session("session_exists", "invalid_input", KindUnsupported, "invalid_configuration"),
		MethodSessionClose:  handler(call.closeSession).session("active_work", "session_closed"),
		MethodSessionDelete: handler(call.deleteSession).session(KindSessionHasForks, KindSessionNotClosed),
	}
}

func unsupported(msg string) error { return newError(CodeDomain, KindUnsupported, msg) }

func (s call) forkSession(ctx context.Context, p SessionForkParams) (SessionForkResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return SessionForkResult{}, err
	}
	fh, ok := s.host.(ForkHost)
	if !ok {
		return SessionForkResult{}, unsupported("this server's host cannot fork sessions")
	}
	life, err := s.host.Log().Session(ctx, p.SessionID)
	if err != nil {
		return SessionForkResult{}, err
	}
	atSeq, explicit := life.Head, p.AtSeq != nil
	if explicit {
		atSeq = *p.AtSeq
		if atSeq < 1 || atSeq > life.Head {
			return SessionForkResult{}, invalidParams(fmt.Sprintf("atSeq must be between 1 and the session's head %d", life.Head))
		}
	}
	st, err := s.forkPoint(ctx, p.SessionID, atSeq, explicit)
	if err != nil {
		return SessionForkResult{}, err
	}
	update, changes := p.overrides("")
	if changes {
		// Checked before the fork exists, so a refused change forks nothing.
		cfg := st.Config
		if err := applyUpdate(&cfg, update); err != nil {
			return SessionForkResult{}, err
		}
		if err := s.checkConfig(ctx, cfg); err != nil {
			return SessionForkResult{}, err
		}
	}
	req := store.ForkRequest{SessionID: p.NewSessionID, Source: p.SessionID, AtSeq: st.Head, AtMs: s.host.NowMs(), Projection: store.ProjectionOf(st)}
	if len(st.Runs()) > 0 {
		req.Projection.Title = life.Title // the fork holds the first run
	}
	forked, err := fh.ForkSession(ctx, req, st)
	if err != nil {
		return SessionForkResult{}, catalogError(err)
	}
	if changes {
		update.SessionID = forked.SessionID
		if _, err := s.updateSession(ctx, update); err != nil {
			return SessionForkResult{}, fmt.Errorf("fork %s was made but its configuration was not changed: %w", forked.SessionID, err)
		}
	}
	return SessionForkResult{SessionID: forked.SessionID, AtSeq: req.AtSeq}, nil
}

// forkPoint returns the source's state at the fork point: at atSeq when no
// run or compaction spans it, else (unless the caller asked for atSeq) at
// the largest seq below that none spans. By default a final session.closed
// is left out too, so the fork of a closed session can go on.
func (s call) forkPoint(ctx context.Context, sessionID string, atSeq int64, explicit bool) (*core.State, error) {
	cps := s.anyCheckpoints()
	st, err := runtime.StateAt(ctx, s.host.Log(), cps, s.host.Blobs(), sessionID, atSeq)
	if err != nil {
		return nil, err
	}
	safe := atSeq
	if !forkable(st) {
		if safe, err = SafeForkPoint(ctx, s.host.Log(), sessionID, st); err != nil {
			return nil, err
		}
		if explicit {
			e := newError(CodeDomain, KindForkPointInsideRun, fmt.Sprintf(
				"seq %d of %s falls inside a run or compaction that had not ended there; the largest safe fork point at or below it is %d",
				atSeq, sessionID, safe))
			e.Data.SafeSeq = &safe
			return nil, e
		}
	}
	if !explicit && st.Closed && safe > 1 {
		last, err := s.host.Log().ReadBefore(ctx, sessionID, safe+1, 1)
		if err != nil {
			return nil, err
		}
		if len(last) == 1 && last[0].Kind == core.KindSessionClosed {
			safe--
		}
	}
	if safe != atSeq {
		return runtime.StateAt(ctx, s.host.Log(), cps, s.host.Blobs(), sessionID, safe)
	}
	return st, nil
}

// forkable reports whether a fork may start from st: no run is active or
// queued and no compaction is pending there.
func forkable(st *core.State) bool { return !st.HasWork() && st.Compaction == nil }

// SafeForkPoint returns the largest seq at or below st.Head at which no run
// (accepted at or before it, ended after it or not at all) and no
// compaction spans the session's log; st is the session's state at
// st.Head. It reads the log backward from st.Head only as far as the
// earliest of those runs' acceptance. 0 means there is none (a log that
// does not start with an idle session).
func SafeForkPoint(ctx context.Context, log store.SessionLog, sessionID string, st *core.State) (int64, error) {
	open := map[string]bool{}
	if st.Active != "" {
		open[st.Active] = true
	}
	for _, id := range st.Queue {
		open[id] = true
	}
	compaction := ""
	if st.Compaction != nil {
		compaction = st.Compaction.ID
	}
	const page = 500
	before := st.Head + 1
	for before > 1 {
		if len(open) == 0 && compaction == "" {
			return before - 1, nil
		}
		evs, err := log.ReadBefore(ctx, sessionID, before, page)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			break
		}
		for i := len(evs) - 1; i >= 0; i-- {
			ev := evs[i]
			if ev.Seq != before-1 {
				return 0, &runtime.HistoryIncompleteError{SessionID: sessionID, Missing: before - 1, Head: st.Head}
			}
			// Undo ev: the state after ev.Seq-1.
			var ids struct {
				RunID        string `json:"runId"`
				CompactionID string `json:"compactionId"`
			}
			switch ev.Kind {
			case core.KindRunAccepted, core.KindRunCompleted, core.KindRunFailed, core.KindRunCancelled,
				core.KindCompactionRequested, core.KindCompactionCompleted, core.KindCompactionFailed:
				if err := json.Unmarshal(ev.Payload, &ids); err != nil {
					return 0, &core.CorruptError{Seq: ev.Seq, Kind: ev.Kind, Reason: err.Error()}
				}
			}
			switch ev.Kind {
			case core.KindRunAccepted:
				delete(open, ids.RunID)
			case core.KindRunCompleted, core.KindRunFailed, core.KindRunCancelled:
				open[ids.RunID] = true
			case core.KindCompactionRequested:
				compaction = ""
			case core.KindCompactionCompleted, core.KindCompactionFailed:
				compaction = ids.CompactionID
			}
			before = ev.Seq
			if len(open) == 0 && compaction == "" {
				return before - 1, nil
			}
		}
	}
	return 0, nil
}

func (s call) cloneSession(ctx context.Context, p SessionCloneParams) (SessionCloneResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return SessionCloneResult{}, err
	}
	cat, ok := s.host.Log().(store.Catalog)
	if !ok {
		return SessionCloneResult{}, unsupported("this server's store cannot record a clone's lineage")
	}
	// The source's current configuration and main instructions, copied out
	// of the state before the callback returns.
	var cfgJSON []byte
	var instr *core.EntryInput
	var opened bool
	err := s.host.Inspect(ctx, p.SessionID, func(st *core.State) {
		opened = st.Opened
		cfgJSON, _ = json.Marshal(st.Config) // plain data: cannot fail
		if e, ok := st.EntryByKey(core.InstructionKeyPrefix + "main"); ok {
			instr = &core.EntryInput{Kind: core.EntryInstructions, Content: e.Content, TokenEstimate: e.TokenEstimate, Preview: e.Preview,
				Origin: e.Origin, ProvenanceRef: e.ProvenanceRef}
		}
	})
	if err != nil {
		return SessionCloneResult{}, err
	}
	if !opened {
		return SessionCloneResult{}, &core.Rejection{Kind: core.RejectInvalidInput, Message: "session " + p.SessionID + " was never opened; there is no configuration to clone"}
	}
	var cfg core.SessionConfig
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return SessionCloneResult{}, err
	}
	update := SessionUpdateParams{Model: p.Model, Tools: p.Tools, Instructions: p.Instructions, ProviderParams: p.ProviderParams, Compaction: p.Compaction}
	if update.changes() {
		if err := applyUpdate(&cfg, update); err != nil {
			return SessionCloneResult{}, err
		}
		if err := s.checkConfig(ctx, cfg); err != nil {
			return SessionCloneResult{}, err
		}
		if p.Instructions != nil {
			if instr, err = s.instructionsEntry(ctx, *p.Instructions); err != nil {
				return SessionCloneResult{}, err
			}
		}
	}
	if !slices.Contains(s.apiKinds, cfg.Model.APIKind) {
		return SessionCloneResult{}, &core.Rejection{Kind: core.RejectInvalidConfiguration,
			Message: "API kind " + cfg.Model.APIKind + " has no adapter in this server; supported: " + strings.Join(s.apiKinds, ", ")}
	}
	if err := s.checkLinks(ctx, cfg.Links); err != nil {
		return SessionCloneResult{}, err
	}
	id, err := s.host.CreateSession(ctx, p.NewSessionID, cfg, instr)
	if err != nil {
		return SessionCloneResult{}, err
	}
	if err := cat.RecordClone(ctx, id, p.SessionID); err != nil {
		return SessionCloneResult{}, fmt.Errorf("recording the lineage of clone %s: %w", id, err)
	}
	return SessionCloneResult{SessionID: id}, nil
}

// withSource returns a filter that adds the session's lineage to a
// session/read result.
func (s call) withSource(ctx context.Context) func(SessionReadResult, error) (SessionReadResult, error) {
	return func(out SessionReadResult, err error) (SessionReadResult, error) {
		if err != nil {
			return out, err
		}
		if cat, ok := s.host.Log().(store.Catalog); ok {
			if out.Source, err = cat.Source(ctx, out.SessionID); err != nil {
				return SessionReadResult{}, err
			}
		}
		return out, nil
	}
}

// catalogError types the errors of forks and deletions for clients.
func catalogError(err error) error {
	var nc *store.NotClosedError
	var hf *store.HasForksError
	switch {
	case errors.Is(err, runtime.ErrNoCatalog):
		return unsupported(err.Error())
	case errors.Is(err, store.ErrForkTooDeep):
		return newError(CodeDomain, KindForkTooDeep, err.Error())
	case errors.Is(err, store.ErrInvalidFork), errors.Is(err, store.ErrInvalidAppend):
		return invalidParams(err.Error())
	case errors.Is(err, store.ErrSessionExists):
		return &core.Rejection{Kind: core.RejectSessionExists, Message: err.Error()}
	case errors.As(err, &nc):
		return newError(CodeDomain, KindSessionNotClosed, nc.Error())
	case errors.As(err, &hf):
		return newError(CodeDomain, KindSessionHasForks, hf.Error())
	}
	return err
}

// ForkSession calls session/fork.
func (c *Client) ForkSession(ctx context.Context, p SessionForkParams) (SessionForkResult, error) {
	var out SessionForkResult
	return out, c.Call(ctx, MethodSessionFork, p, &out)
}

// CloneSession calls session/clone.
func (c *Client) CloneSession(ctx context.Context, p SessionCloneParams) (SessionCloneResult, error) {
	var out SessionCloneResult
	return out, c.Call(ctx, MethodSessionClone, p, &out)
}
