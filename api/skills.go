package api

import (
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

// Skill activation methods.
const (
	MethodSkillsActivate   = "session/skills/activate"
	MethodSkillsDeactivate = "session/skills/deactivate"
)

// SkillParams name one skill of a session's linked files.
type SkillParams struct {
	SessionID string `json:"sessionId"`
	Name      string `json:"name"`
}

// SkillActivateResult says where the skill body entered context.
type SkillActivateResult struct {
	Revision int64  `json:"revision"`
	EntryID  string `json:"entryId"`
	Key      string `json:"key"`
}

// SkillDeactivateResult is the context revision after the removal.
type SkillDeactivateResult struct {
	Revision int64 `json:"revision"`
}

// activateSkill adds a skill's body to an idle session's context until it is
// deactivated (session scope). Run-scoped activations come with
// session/runs/start's skills.
func (s call) activateSkill(ctx context.Context, p SkillParams) (SkillActivateResult, error) {
	if err := requireSkill(p); err != nil {
		return SkillActivateResult{}, err
	}
	links, err := s.links(ctx, p.SessionID)
	if err != nil {
		return SkillActivateResult{}, err
	}
	in, err := runtime.ActivateSkill(ctx, s.host.Blobs(), s.host.Files(), links, p.Name)
	if err != nil {
		return SkillActivateResult{}, err
	}
	adm, err := s.host.Submit(ctx, p.SessionID, core.AppendContext{AtMs: s.host.NowMs(), Entries: []core.EntryInput{in}})
	if err != nil {
		return SkillActivateResult{}, err
	}
	if len(adm.EntryIDs) != 1 {
		return SkillActivateResult{}, fmt.Errorf("activation admitted %d entries, want 1", len(adm.EntryIDs))
	}
	return SkillActivateResult{Revision: adm.Revision, EntryID: adm.EntryIDs[0], Key: in.Key}, nil
}

func (s call) deactivateSkill(ctx context.Context, p SkillParams) (SkillDeactivateResult, error) {
	if err := requireSkill(p); err != nil {
		return SkillDeactivateResult{}, err
	}
	adm, err := s.host.Submit(ctx, p.SessionID, core.RemoveContext{AtMs: s.host.NowMs(), Keys: []string{core.SkillKeyPrefix + p.Name}})
	if err != nil {
		return SkillDeactivateResult{}, err
	}
	return SkillDeactivateResult{Revision: adm.Revision}, nil
}

// runActivations loads the skills a run activates for its own duration.
func (s call) runActivations(ctx context.Context, sessionID string, names []string) ([]core.EntryInput, error) {
	if len(names) == 0 {
		return nil, nil
	}
	links, err := s.links(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]core.EntryInput, len(names))
	for i, name := range names {
		if name == "" {
			return nil, invalidParams(fmt.Sprintf("skills[%d] is empty", i))
		}
		if out[i], err = runtime.ActivateSkill(ctx, s.host.Blobs(), s.host.Files(), links, name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// links returns the session's current links.
func (s call) links(ctx context.Context, sessionID string) ([]core.Link, error) {
	var links []core.Link
	err := s.host.Inspect(ctx, sessionID, func(st *core.State) { links = append(links, st.Config.Links...) })
	return links, err
}

func requireSkill(p SkillParams) error {
	if err := requireSession(p.SessionID); err != nil {
		return err
	}
	if p.Name == "" {
		return invalidParams("name is required")
	}
	return nil
}

// ActivateSkill calls session/skills/activate.
func (c *Client) ActivateSkill(ctx context.Context, sessionID, name string) (SkillActivateResult, error) {
	var out SkillActivateResult
	return out, c.Call(ctx, MethodSkillsActivate, SkillParams{SessionID: sessionID, Name: name}, &out)
}

// DeactivateSkill calls session/skills/deactivate.
func (c *Client) DeactivateSkill(ctx context.Context, sessionID, name string) (SkillDeactivateResult, error) {
	var out SkillDeactivateResult
	return out, c.Call(ctx, MethodSkillsDeactivate, SkillParams{SessionID: sessionID, Name: name}, &out)
}
