package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/assembly"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/visible"
)

// AgentRunTool is the built-in tool that runs a sub-agent: a child
// session from a profile of the session's agent menu (.cairn/agents/NAME.md),
// whose run's output text is the call's result.
const AgentRunTool = "agent_run"

// Bounds on sub-agents.
const (
	// MaxAgentDepth is how deep sub-agents nest: a session's child is at
	// depth 1.
	MaxAgentDepth = 3
	// MaxChildren is how many sub-agents of one session run at once: the
	// first MaxChildren agent_run calls of a turn run, later ones get an
	// error result (a turn's calls run together, and a session has one
	// turn at a time).
	MaxChildren = 4
)

// Children runs sub-agents' sessions; the host implements it.
type Children interface {
	// RunChild opens the child session if it does not exist, starts its
	// run once (a call run again after a crash finds the same run), and
	// waits for the run to end. When ctx ends first, the child's run is
	// cancelled.
	RunChild(ctx context.Context, c ChildRun) (ChildResult, error)
}

// ChildRun is a sub-agent to run.
type ChildRun struct {
	SessionID    string // ChildSessionID of the call
	Parent       core.ParentRef
	Config       core.SessionConfig
	Instructions string // the profile's body
	Input        string
}

// ChildResult is how the child's run ended.
type ChildResult struct {
	SessionID string
	RunID     string
	Status    string
	Output    *content.ContentRef
	Error     *core.Failure
}

// AgentEnv is what agent_run needs of its call beyond its arguments.
type AgentEnv struct {
	// Parent names this call as the child's parent; its Depth is the
	// child's.
	Parent core.ParentRef
	// Slot is how many agent_run calls came before this one in its turn.
	Slot     int
	Config   core.SessionConfig // the calling session's
	Children Children
	Blobs    blob.Store
	Files    Files
}

// ChildSessionID is the id of the session an agent_run call starts: the
// parent's id and a digest of the call, so that a call run again after a
// crash finds the child it started.
func ChildSessionID(parent, callID string) string {
	sum := sha256.Sum256([]byte(parent + "\x00" + callID))
	suffix := ".sub-" + hex.EncodeToString(sum[:])[:16]
	if len(parent)+len(suffix) > 128 {
		parent = parent[:128-len(suffix)]
	}
	return parent + suffix
}

// AgentMenuAllowed reports whether a session at depth (0 for one without a
// parent) may start sub-agents, and so sees the agent menu: it grants
// agent_run and its children would not nest too deep.
func AgentMenuAllowed(cfg core.SessionConfig, depth int) bool {
	return slices.Contains(cfg.Tools, AgentRunTool) && depth < MaxAgentDepth
}

// AgentRun returns the agent_run tool.
func AgentRun() Tool { return agentRun{} }

type agentRun struct{}

func (agentRun) Definition() provider.Tool {
	return provider.Tool{Name: AgentRunTool,
		Description: "Run a sub-agent: one of the agent profiles listed in your context, on an input you write for it. It works on its own, with its own tools, and its final answer is this call's result.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"agent":{"type":"string","description":"The profile's name, from the list of agent profiles."},` +
			`"input":{"type":"string","description":"The task for the sub-agent, with everything it needs to know."}},"required":["agent","input"],"additionalProperties":false}`)}
}

func (agentRun) Invoke(ctx context.Context, env ToolEnv, args json.RawMessage) (ToolOutput, error) {
	refuse := func(format string, a ...any) (ToolOutput, error) {
		return ToolOutput{IsError: true, Content: fmt.Appendf(nil, format, a...)}, nil
	}
	var in struct {
		Agent string `json:"agent"`
		Input string `json:"input"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Agent == "" || strings.TrimSpace(in.Input) == "" {
		return refuse("agent_run takes {\"agent\": a profile's name, \"input\": the task}.")
	}
	a := env.Agent
	if a == nil || a.Children == nil {
		return refuse("Sub-agents cannot run on this server.")
	}
	if a.Parent.Depth > MaxAgentDepth {
		return refuse("Sub-agents nest at most %d deep; this one would be at depth %d.", MaxAgentDepth, a.Parent.Depth)
	}
	if a.Slot >= MaxChildren {
		return refuse("At most %d sub-agents run at once; this was agent_run call %d of one turn, and it did not run. Call it again after the others have answered.", MaxChildren, a.Slot+1)
	}
	item, ok, names, err := findProfile(ctx, a, in.Agent)
	if err != nil {
		return ToolOutput{}, err
	}
	if !ok {
		return refuse("No agent profile is named %q; the profiles are: %s.", in.Agent, names)
	}
	fm, body, err := assembly.ReadProfile(ctx, a.Blobs, item)
	if err != nil {
		return ToolOutput{}, err
	}
	res, err := a.Children.RunChild(ctx, ChildRun{SessionID: ChildSessionID(a.Parent.SessionID, a.Parent.CallID), Parent: a.Parent,
		Config: childConfig(a.Config, fm), Instructions: string(body), Input: in.Input})
	if err != nil {
		return ToolOutput{}, err
	}
	switch res.Status {
	case core.StatusCompleted:
		if res.Output == nil {
			return ToolOutput{Content: []byte("(the sub-agent finished without an answer)")}, nil
		}
		text, err := visible.Text(ctx, a.Blobs, *res.Output)
		if err != nil {
			return ToolOutput{}, err
		}
		return ToolOutput{Content: []byte(text)}, nil
	case core.StatusFailed:
		msg := "The sub-agent's run failed."
		if res.Error != nil {
			msg = fmt.Sprintf("The sub-agent's run failed (%s): %s", res.Error.Kind, res.Error.Message)
		}
		return refuse("%s", msg)
	}
	return refuse("The sub-agent's run ended %s.", res.Status)
}

// findProfile finds the profile named name in the session's linked files.
func findProfile(ctx context.Context, a *AgentEnv, name string) (assembly.CatalogItem, bool, string, error) {
	if a.Files == nil || len(a.Config.Links) == 0 {
		return assembly.CatalogItem{}, false, "none (the session links no files)", nil
	}
	trees, err := LinkedTrees(ctx, a.Blobs, a.Files, a.Config.Links)
	if err != nil {
		return assembly.CatalogItem{}, false, "", err
	}
	menu, _, err := assembly.BuildAgentMenu(ctx, a.Blobs, a.Files, trees, assembly.Limits{})
	if err != nil || menu == nil {
		return assembly.CatalogItem{}, false, "none", err
	}
	item, ok := menu.Find(name)
	names := make([]string, len(menu.Items))
	for i, it := range menu.Items {
		names[i] = it.Name
	}
	return item, ok, strings.Join(names, ", "), nil
}

// childConfig is a sub-agent's config: the parent's provider and API kind
// with the profile's model (else the parent's), the profile's tools as far
// as the parent was granted them (a child never has more power than its
// parent: "docs.echo" when the parent has "docs.*", but the parent's own
// grants of docs when the profile asks for "docs.*"), the parent's links,
// and every approval the parent needs for those tools.
func childConfig(parent core.SessionConfig, fm assembly.Frontmatter) core.SessionConfig {
	cfg := core.SessionConfig{Model: parent.Model, Links: parent.Links, ProviderParams: parent.ProviderParams}
	if fm.Model != "" {
		cfg.Model.Model = fm.Model
	}
	add := func(t string) {
		if !slices.Contains(cfg.Tools, t) && !isClientTool(parent, t) {
			cfg.Tools = append(cfg.Tools, t)
		}
	}
	for _, t := range fm.Tools {
		server, tool, isMCP := core.MCPGrant(t)
		switch {
		case slices.Contains(parent.Tools, t):
			add(t)
		case isMCP && tool != "*" && slices.Contains(parent.Tools, server+".*"):
			add(t)
		case isMCP && tool == "*":
			for _, g := range parent.Tools {
				if s, _, ok := core.MCPGrant(g); ok && s == server {
					add(g)
				}
			}
		}
	}
	for _, t := range cfg.Tools {
		if parentApproves(parent, t) {
			cfg.Approvals = append(cfg.Approvals, core.ToolApproval{Tool: t, Policy: core.ApprovalAlways})
		}
	}
	slices.SortFunc(cfg.Approvals, func(a, b core.ToolApproval) int { return strings.Compare(a.Tool, b.Tool) })
	return cfg
}

// parentApproves reports whether the parent's calls of the tool granted
// as t wait for approval: t's own approval, or for "S.x" one of "S.*".
func parentApproves(parent core.SessionConfig, t string) bool {
	for _, a := range parent.Approvals {
		if a.Tool == t {
			return true
		}
		if server, tool, ok := core.MCPGrant(t); ok && tool != "*" && a.Tool == server+".*" {
			return true
		}
	}
	return false
}

// isClientTool: a client watches its own session, not a sub-agent's.
func isClientTool(cfg core.SessionConfig, name string) bool {
	return slices.ContainsFunc(cfg.ClientTools, func(t core.ClientTool) bool { return t.Name == name })
}
