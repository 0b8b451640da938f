package api

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// MethodSessionUpdate changes a session's configuration for its next runs.
const MethodSessionUpdate = "session/update"

func sessionUpdateRoutes() map[string]method {
	return map[string]method{
		MethodSessionUpdate: handler(call.updateSession).session("invalid_configuration", "revision_conflict", "session_closed", "compaction_pending", "unknown_reference"),
	}
}

// SessionUpdateParams change what they name of a session's configuration
// and keep the rest. Tools replaces the granted tools by name (a client
// tool stays defined while it is named; new client tools need a new
// session). Instructions replaces the main instructions. A model must keep
// the session's API kind. With ExpectedRevision the change applies only to
// that configuration revision (session/read's configRevision). An idle
// session changes at once; one with an active or queued run changes at its
// next idle boundary, before a queued run starts (a later update replaces
// a waiting one).
type SessionUpdateParams struct {
	SessionID        string               `json:"sessionId"`
	Model            *core.ModelSelection `json:"model,omitempty"`
	Tools            *[]string            `json:"tools,omitempty"`
	Instructions     *string              `json:"instructions,omitempty"`
	ProviderParams   json.RawMessage      `json:"providerParams,omitempty"`
	Compaction       *core.Compaction     `json:"compaction,omitempty"`
	ExpectedRevision *int64               `json:"expectedRevision,omitempty"`
}

// SessionUpdateResult is the configuration revision the change makes;
// Pending says it waits for the active run to end.
type SessionUpdateResult struct {
	SessionID      string `json:"sessionId"`
	ConfigRevision int64  `json:"configRevision"`
	Pending        bool   `json:"pending,omitempty"`
}

func (s call) updateSession(ctx context.Context, p SessionUpdateParams) (SessionUpdateResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return SessionUpdateResult{}, err
	}
	if p.ExpectedRevision != nil && *p.ExpectedRevision < 0 {
		return SessionUpdateResult{}, invalidParams("expectedRevision must not be negative")
	}
	if !p.changes() {
		return SessionUpdateResult{}, invalidParams("name at least one of model, tools, instructions, providerParams, compaction")
	}
	var cfgJSON []byte
	var revision int64
	err := s.host.Inspect(ctx, p.SessionID, func(st *core.State) {
		cfgJSON, _ = json.Marshal(st.Config) // plain data: cannot fail
		revision = st.ConfigRevision
	})
	if err != nil {
		return SessionUpdateResult{}, err
	}
	var cfg core.SessionConfig
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil { // a copy the change cannot share with the state
		return SessionUpdateResult{}, err
	}
	if err := applyUpdate(&cfg, p); err != nil {
		return SessionUpdateResult{}, err
	}
	if err := s.checkConfig(ctx, cfg); err != nil {
		return SessionUpdateResult{}, err
	}
	var instr *core.EntryInput
	if p.Instructions != nil {
		if instr, err = s.instructionsEntry(ctx, *p.Instructions); err != nil {
			return SessionUpdateResult{}, err
		}
	}
	// The change is made from the revision read: one landing meanwhile
	// is a conflict, not overwritten.
	expected := revision
	if p.ExpectedRevision != nil {
		expected = *p.ExpectedRevision
	}
	adm, err := s.host.Submit(ctx, p.SessionID, core.ChangeConfig{AtMs: s.host.NowMs(), Config: cfg, Instructions: instr, ExpectedRevision: &expected})
	if err != nil {
		return SessionUpdateResult{}, err
	}
	return SessionUpdateResult{SessionID: p.SessionID, ConfigRevision: expected + 1, Pending: adm.ConfigPending}, nil
}

// changes reports whether p names anything to change.
func (p SessionUpdateParams) changes() bool {
	return p.Model != nil || p.Tools != nil || p.Instructions != nil || p.ProviderParams != nil || p.Compaction != nil
}

// instructionsEntry stores text as the session's main instructions.
func (s call) instructionsEntry(ctx context.Context, text string) (*core.EntryInput, error) {
	if text == "" {
		return nil, invalidParams("instructions is empty")
	}
	item, err := runtime.TextInput(ctx, s.host.Blobs(), text)
	if err != nil {
		return nil, err
	}
	return &core.EntryInput{Kind: core.EntryInstructions, Content: item.Content, TokenEstimate: item.TokenEstimate, Preview: item.Preview}, nil
}

// applyUpdate sets what p names on cfg. Approvals and client tool
// definitions of tools no longer granted go with them.
func applyUpdate(cfg *core.SessionConfig, p SessionUpdateParams) error {
	if p.Model != nil {
		if p.Model.APIKind == "" {
			p.Model.APIKind = cfg.Model.APIKind
		}
		if p.Model.APIKind != cfg.Model.APIKind {
			return &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: "model.apiKind: a session's API kind is fixed (" + cfg.Model.APIKind + "); start a new session for " + p.Model.APIKind}
		}
		cfg.Model = *p.Model
	}
	if p.Tools != nil {
		cfg.Tools = slices.Clone(*p.Tools)
		// Cloned first: cfg may share its slices with a state.
		cfg.ClientTools = slices.DeleteFunc(slices.Clone(cfg.ClientTools), func(c core.ClientTool) bool { return !slices.Contains(cfg.Tools, c.Name) })
		cfg.Approvals = slices.DeleteFunc(slices.Clone(cfg.Approvals), func(a core.ToolApproval) bool { return !slices.Contains(cfg.Tools, a.Tool) })
	}
	if p.ProviderParams != nil {
		cfg.ProviderParams = p.ProviderParams
		if string(p.ProviderParams) == "null" {
			cfg.ProviderParams = nil
		}
	}
	if p.Compaction != nil {
		cfg.Compaction = p.Compaction
	}
	return nil
}
