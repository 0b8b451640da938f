package core_test

import (
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

func mcpConfig() core.SessionConfig {
	cfg := testConfig("search", "docs.*", "issues.create")
	catalog := content.Ref([]byte(`[]`), core.MediaMCPCatalog, "")
	cfg.MCPTools = []core.MCPTool{{Server: "docs", Name: "find"}, {Server: "docs", Name: "read.page"}, {Server: "issues", Name: "create"}, {Server: "issues", Name: "delete"}}
	cfg.MCPCatalog = &catalog
	cfg.Approvals = []core.ToolApproval{{Tool: "issues.create", Policy: core.ApprovalAlways}}
	return cfg
}

// The model calls an MCP tool by its wire name: a tool of a server granted
// with "SERVER.*" runs, one granted by name waits for its approval, and a
// listed tool the grants leave out is unavailable.
func TestMCPTools_CallsFollowTheirGrant(t *testing.T) {
	h := newHarness(t, mcpConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("file it")})
	h.callTools(call("c1", "docs__find"), call("c2", "issues__create"), call("c3", "issues__delete"), call("c4", core.MCPToolWireName("docs", "read.page")))
	st := h.state()
	if p := st.Run("r1").PendingApprovals(); len(p) != 1 || p[0].CallID != "c2" {
		t.Fatalf("pending approvals %+v; want c2 (issues.create) only", p)
	}
	w := h.expectTools()
	var ids []string
	for _, c := range w.Calls {
		ids = append(ids, c.CallID)
	}
	if strings.Join(ids, ",") != "c1,c4" {
		t.Fatalf("the host runs %v; want c1 and c4 (docs.*), c3 unavailable, c2 waiting", ids)
	}
}

// Wire names are what every provider API accepts, keep a plain name as it
// is, and never give two tools the same name.
func TestMCPTools_WireNames(t *testing.T) {
	if got := core.MCPToolWireName("docs", "find_page"); got != "docs__find_page" {
		t.Fatalf("plain name became %q", got)
	}
	long := strings.Repeat("x", 100)
	seen := map[string]string{}
	for _, tool := range []string{"read.page", "read_page", "read/page", long, long + "y", "ünïcode"} {
		w := core.MCPToolWireName("docs", tool)
		if len(w) > core.MaxToolNameOnWire || strings.ContainsFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) {
			t.Fatalf("wire name %q of %q is not one every API accepts", w, tool)
		}
		if other, dup := seen[w]; dup {
			t.Fatalf("%q and %q share the wire name %q", tool, other, w)
		}
		seen[w] = tool
		if w != core.MCPToolWireName("docs", tool) {
			t.Fatal("a wire name is not stable")
		}
	}
}

// Bad grants and catalogs are refused with the config's words.
func TestMCPTools_ConfigIsChecked(t *testing.T) {
	bad := map[string]func(*core.SessionConfig){
		"server with a dot in it": func(c *core.SessionConfig) { c.Tools = append(c.Tools, "a_b.x") },
		"empty tool":              func(c *core.SessionConfig) { c.Tools = append(c.Tools, "docs.") },
		"tool of a server not granted": func(c *core.SessionConfig) {
			c.MCPTools = append(c.MCPTools, core.MCPTool{Server: "mail", Name: "send"})
		},
		"tool listed twice":       func(c *core.SessionConfig) { c.MCPTools = append(c.MCPTools, c.MCPTools[0]) },
		"tools without a catalog": func(c *core.SessionConfig) { c.MCPCatalog = nil },
	}
	for name, edit := range bad {
		cfg := mcpConfig()
		edit(&cfg)
		err := core.ValidateConfig(cfg)
		rej, ok := err.(*core.Rejection)
		if !ok || rej.Kind != core.RejectInvalidConfiguration {
			t.Errorf("%s: got %v, want an invalid_configuration rejection", name, err)
		}
	}
	if err := core.ValidateConfig(mcpConfig()); err != nil {
		t.Fatal(err)
	}
}

// The catalog is part of the planned request: a new catalog changes the
// fingerprint, the same one does not.
func TestMCPTools_CatalogIsFingerprinted(t *testing.T) {
	a := mcpConfig()
	b := mcpConfig()
	other := content.Ref([]byte(`[{"server":"docs"}]`), core.MediaMCPCatalog, "")
	b.MCPCatalog = &other
	if core.PlanFingerprint(a, nil) == core.PlanFingerprint(b, nil) {
		t.Fatal("a new MCP catalog leaves the fingerprint as it was")
	}
	if core.PlanFingerprint(a, nil) != core.PlanFingerprint(mcpConfig(), nil) {
		t.Fatal("the same catalog fingerprints differently")
	}
}
