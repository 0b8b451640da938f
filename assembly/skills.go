package assembly

import (
	"context"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/vfs"
)

// Skill catalog format identity.
const (
	SkillCatalogFormat    = "cairn.skill-catalog"
	SkillCatalogMediaType = "application/vnd.cairn.skill-catalog+json"
)

// SkillRoots are the directories searched for SKILL.md files, in order.
var SkillRoots = []string{".cairn/skills", ".agents/skills"}

// SkillCatalogHeader is the first line of the skill catalog text.
const SkillCatalogHeader = "Skills available in this session; before using a skill, read its SKILL.md with the vfs_read_file tool:"

var skillKind = catalogKind{
	format:    SkillCatalogFormat,
	mediaType: SkillCatalogMediaType,
	header:    SkillCatalogHeader,
	discover:  DiscoverSkills,
	items:     func(w *catalogWire) *[]CatalogItem { return &w.Skills },
}

// DiscoverSkills returns every file named SKILL.md at any depth under
// SkillRoots, root by root and in path order within a root.
func DiscoverSkills(m vfs.Manifest) []vfs.Entry {
	var out []vfs.Entry
	for _, root := range SkillRoots {
		e, _ := vfs.Glob(m, root+"/**/SKILL.md") // constant pattern: never malformed
		out = append(out, e...)
	}
	return out
}

// BuildSkillCatalog builds and stores the skill catalog of trees (given in
// link order; the first holder of a name wins), recording edges from the JSON
// document to the text and to every SKILL.md it names. The catalog is nil when
// no valid skill was found; the warnings are returned either way.
func BuildSkillCatalog(ctx context.Context, blobs blob.Store, edges vfs.Edges, trees []Tree, limits Limits) (*Catalog, []Warning, error) {
	return buildCatalog(ctx, blobs, edges, trees, limits, skillKind)
}

// ParseSkillCatalog decodes a stored skill catalog document.
func ParseSkillCatalog(data []byte) (*Catalog, error) { return parseCatalog(data, skillKind) }
