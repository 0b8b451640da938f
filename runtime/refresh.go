package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/assembly"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/vfs"
)

// Refreshed is what a refresh derives: the context entries of the linked
// files, and the MCP tool catalog (nil when the session grants no MCP
// tools).
type Refreshed struct {
	Entries []core.EntryInput `json:"entries,omitempty"`
	MCP     *MCPCatalog       `json:"mcp,omitempty"`
}

// RefreshContext brings the material derived from the session's linked
// files (instructions, skill catalog, agent menu) and its MCP servers' tool
// lists up to date before it admits new run work, and only at the refresh
// boundary (core.State.AtRefreshBoundary): queued work runs on the context
// and tools it was queued against. derive reads them wherever the host
// does its I/O (Executor.Refresh, or an activity). Only what changed is
// admitted, so an idle refresh appends nothing and the next request keeps
// its prefix; a changed tool list is a config change.
func RefreshContext(h Host, derive func(s core.Summary) (Refreshed, error)) error {
	Flush(h)
	st := h.Drive().State()
	if !st.AtRefreshBoundary() {
		return nil
	}
	derived, err := derive(st.Summary())
	if err != nil {
		return err
	}
	for _, cmd := range core.RefreshEdits(st, derived.Entries, h.NowMs()) {
		if _, err := AdmitAndAppend(h, cmd); err != nil {
			return err
		}
	}
	m := derived.MCP
	if m == nil {
		return nil
	}
	if !m.same(h.Drive().State().Config) {
		cfg := h.Drive().State().Config
		cfg.MCPTools, cfg.MCPCatalog = m.Tools, m.Ref
		if _, err := AdmitAndAppend(h, core.ChangeConfig{AtMs: h.NowMs(), Config: cfg}); err != nil {
			return err
		}
	}
	for _, w := range m.warnings(h.NowMs()) {
		if _, err := AdmitAndAppend(h, w); err != nil {
			return err
		}
	}
	return nil
}

// Refresh derives the context material of a session's linked files as they
// are now, and its MCP tool catalog (RefreshMCP). Of the files: per link,
// the instructions assembled from its prompt files (with the assembly
// report as provenance); across links, the skill catalog and the
// agent menu. Everything is stored before it is returned; the entries only
// point at it. Hosts admit the result through core.RefreshEdits at the
// refresh boundary. A link to a workspace or snapshot the universe lacks is a
// *core.Rejection.
func (x *Executor) Refresh(ctx context.Context, cfg core.SessionConfig, agentMenu bool) (Refreshed, error) {
	entries, err := x.refreshFiles(ctx, cfg.Links, agentMenu)
	if err != nil {
		return Refreshed{}, err
	}
	mcp, err := x.RefreshMCP(ctx, cfg)
	return Refreshed{Entries: entries, MCP: mcp}, err
}

// NothingToRefresh reports that Refresh derives nothing for cfg, whatever
// the files and servers hold: it links no files and grants no MCP server.
// A host whose Refresh costs a round trip (Temporal's activity) takes the
// empty Refreshed instead, which RefreshContext admits the same way.
func NothingToRefresh(cfg core.SessionConfig) bool {
	return len(cfg.Links) == 0 && len(grantedServers(cfg)) == 0
}

// refreshFiles derives the context material of the linked files; the
// agent menu only for a session that may start sub-agents (see
// AgentMenuAllowed).
func (x *Executor) refreshFiles(ctx context.Context, links []core.Link, agentMenu bool) ([]core.EntryInput, error) {
	if len(links) == 0 || x.Files == nil {
		return nil, nil
	}
	trees, err := LinkedTrees(ctx, x.Blobs, x.Files, links)
	if err != nil {
		return nil, err
	}
	instrs, err := assembly.AssembleInstructions(ctx, x.Blobs, x.Files, trees, assembly.Limits{})
	if err != nil {
		return nil, err
	}
	var out []core.EntryInput
	for _, in := range instrs {
		if in.Text.Digest.IsZero() {
			continue // every source was omitted; the report says why
		}
		report := in.Report
		out = append(out, core.EntryInput{
			Kind: core.EntryInstructions, Key: core.DerivedInstructionKeyPrefix + in.Mount, Content: in.Text,
			TokenEstimate: estimateSize(in.TextBytes), Preview: provider.Preview(in.Preview),
			Origin: "vfs:" + in.Mount, ProvenanceRef: &report,
		})
	}
	skills, _, err := assembly.BuildSkillCatalog(ctx, x.Blobs, x.Files, trees, assembly.Limits{})
	if err != nil {
		return nil, err
	}
	var agents *assembly.Catalog
	if agentMenu {
		if agents, _, err = assembly.BuildAgentMenu(ctx, x.Blobs, x.Files, trees, assembly.Limits{}); err != nil {
			return nil, err
		}
	}
	for _, c := range []struct {
		key string
		cat *assembly.Catalog
	}{{core.SkillCatalogKey, skills}, {core.AgentMenuKey, agents}} {
		if c.cat == nil {
			continue
		}
		in, err := catalogEntry(ctx, x.Blobs, c.key, c.cat)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

func catalogEntry(ctx context.Context, blobs blob.Store, key string, c *assembly.Catalog) (core.EntryInput, error) {
	text, err := blobs.Get(ctx, c.Text.Digest)
	if err != nil {
		return core.EntryInput{}, fmt.Errorf("reading catalog %s: %w", key, err)
	}
	doc := c.Doc
	return core.EntryInput{Kind: core.EntryCatalog, Key: key, Content: c.Text, TokenEstimate: provider.Estimate(text),
		Preview: provider.Preview(c.Preview), Origin: "vfs", ProvenanceRef: &doc}, nil
}

// estimateSize is provider.Estimate for a text of n bytes.
func estimateSize(n int64) core.TokenEstimate {
	const perEntryOverhead = 4
	return core.TokenEstimate{Tokens: (n+3)/4 + perEntryOverhead, Quality: core.EstimateHeuristic}
}

// LinkedTrees resolves each link to the tree it shows now: a workspace's
// current head, or the pinned snapshot.
func LinkedTrees(ctx context.Context, blobs blob.Store, files Files, links []core.Link) ([]assembly.Tree, error) {
	trees := make([]assembly.Tree, 0, len(links))
	for _, l := range links {
		t := assembly.Tree{Mount: l.Mount, Workspace: l.Workspace}
		if l.Workspace != "" {
			w, err := files.Workspace(ctx, l.Workspace)
			if errors.Is(err, store.ErrWorkspaceNotFound) {
				return nil, &core.Rejection{Kind: core.RejectUnknownReference, Message: fmt.Sprintf("link at %s: workspace %s not found", l.Mount, l.Workspace)}
			}
			if err != nil {
				return nil, err
			}
			t.Snapshot = w.Head
		} else {
			d, err := content.ParseDigest(l.Snapshot)
			if err != nil {
				return nil, &core.Rejection{Kind: core.RejectInvalidConfiguration, Message: fmt.Sprintf("link at %s: %v", l.Mount, err)}
			}
			if _, err := files.Snapshot(ctx, d); errors.Is(err, store.ErrSnapshotNotFound) {
				return nil, &core.Rejection{Kind: core.RejectUnknownReference, Message: fmt.Sprintf("link at %s: snapshot %s is not recorded", l.Mount, d)}
			} else if err != nil {
				return nil, err
			}
			t.Snapshot = d
		}
		m, err := vfs.ReadManifest(ctx, blobs, t.Snapshot)
		if err != nil {
			return nil, err
		}
		t.Manifest = m
		trees = append(trees, t)
	}
	return trees, nil
}
