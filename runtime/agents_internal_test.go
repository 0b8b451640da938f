package runtime

import (
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/assembly"
	"github.com/cairn-agents/cairn/core"
)

// A sub-agent gets no tool its parent lacks, and every approval its
// parent needs for the tools it gets, also through "SERVER.*".
func TestChildConfigNeverWidensThePower(t *testing.T) {
	parent := core.SessionConfig{
		Model:       core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "big"},
		Tools:       []string{"vfs_read_file", "docs.*", "mail.send", "lookup", AgentRunTool},
		ClientTools: []core.ClientTool{{Name: "lookup"}},
		Approvals:   []core.ToolApproval{{Tool: "docs.*", Policy: core.ApprovalAlways}, {Tool: "mail.send", Policy: core.ApprovalAlways}},
	}
	got := childConfig(parent, assembly.Frontmatter{Model: "small",
		Tools: []string{"vfs_read_file", "vfs_write_file", "docs.find", "mail.*", "lookup", "shell.*"}})
	if want := []string{"vfs_read_file", "docs.find", "mail.send"}; !reflect.DeepEqual(got.Tools, want) {
		t.Fatalf("child tools %v, want %v", got.Tools, want)
	}
	want := []core.ToolApproval{{Tool: "docs.find", Policy: core.ApprovalAlways}, {Tool: "mail.send", Policy: core.ApprovalAlways}}
	if !reflect.DeepEqual(got.Approvals, want) || got.Model.Model != "small" || got.Model.ProviderID != "p" {
		t.Fatalf("child config %+v", got)
	}
	if err := core.ValidateConfig(got); err != nil {
		t.Fatal(err)
	}
}

// What an agent_run call carries of its session (into the tool activity on
// Temporal) leaves out client tools' schemas and the MCP catalog, and
// still makes the same child.
func TestAgentParentIsThin(t *testing.T) {
	parent := core.SessionConfig{
		Model:       core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "big"},
		Tools:       []string{"vfs_read_file", "lookup", AgentRunTool},
		ClientTools: []core.ClientTool{{Name: "lookup", Description: "Look a ticket up.", Parameters: []byte(`{"type":"object"}`)}},
		MCPTools:    []core.MCPTool{{Server: "docs", Name: "find"}},
	}
	thin := agentParent(parent)
	if thin.ClientTools[0].Parameters != nil || thin.ClientTools[0].Description != "" || thin.MCPTools != nil {
		t.Fatalf("agentParent kept %+v", thin)
	}
	fm := assembly.Frontmatter{Tools: []string{"vfs_read_file", "lookup"}}
	if !reflect.DeepEqual(childConfig(*thin, fm), childConfig(parent, fm)) {
		t.Fatal("the thin config makes another child")
	}
}
