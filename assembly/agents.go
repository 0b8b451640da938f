package assembly

import (
	"context"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/vfs"
)

// Agent menu format identity.
const (
	AgentMenuFormat    = "cairn.agent-menu"
	AgentMenuMediaType = "application/vnd.cairn.agent-menu+json"
)

// AgentRoots are the directories searched for agent profiles, in order.
var AgentRoots = []string{".cairn/agents", ".agents/agents"}

// AgentMenuHeader is the first line of the agent menu text.
const AgentMenuHeader = "Agent profiles this session may start:"

var agentKind = catalogKind{
	format:    AgentMenuFormat,
	mediaType: AgentMenuMediaType,
	header:    AgentMenuHeader,
	withModel: true,
	discover:  DiscoverAgents,
	items:     func(w *catalogWire) *[]CatalogItem { return &w.Agents },
}

// DiscoverAgents returns the "*.md" files directly in AgentRoots, root by root
// and in name order within a root.
func DiscoverAgents(m vfs.Manifest) []vfs.Entry {
	var out []vfs.Entry
	for _, root := range AgentRoots {
		e, _ := vfs.Glob(m, root+"/*.md") // constant pattern: never malformed
		out = append(out, e...)
	}
	return out
}

// BuildAgentMenu builds and stores the sub-agent menu of trees, as
// BuildSkillCatalog does for skills; an agent's optional "model" is kept.
func BuildAgentMenu(ctx context.Context, blobs blob.Store, edges vfs.Edges, trees []Tree, limits Limits) (*Catalog, []Warning, error) {
	return buildCatalog(ctx, blobs, edges, trees, limits, agentKind)
}

// ParseAgentMenu decodes a stored agent menu document.
func ParseAgentMenu(data []byte) (*Catalog, error) { return parseCatalog(data, agentKind) }
