package assembly

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

// CatalogVersion is the version of both catalog formats.
const CatalogVersion = 1

// CatalogItem is one skill or agent profile.
type CatalogItem struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Model       string             `json:"model,omitempty"` // agent profiles only
	Tools       []string           `json:"tools,omitempty"` // agent profiles only
	Path        string             `json:"path"`            // absolute path of the file
	Ref         content.ContentRef `json:"ref"`             // the file's bytes, frontmatter included
}

// Catalog is a skill catalog or an agent menu: items sorted by name (byte
// order), names unique.
type Catalog struct {
	Format   string // SkillCatalogFormat or AgentMenuFormat
	Items    []CatalogItem
	Warnings []Warning
	// Text is the text/plain document the model sees: a header line, then
	// "- name: description (path)" per item.
	Text content.ContentRef
	// Doc is the stored JSON document, suitable as the entry's provenance
	// ref; zero in a Catalog returned by a Parse function.
	Doc     content.ContentRef
	Preview string // bounded preview of the text
}

// Find returns the item named name.
func (c *Catalog) Find(name string) (CatalogItem, bool) {
	i, ok := slices.BinarySearchFunc(c.Items, name, func(it CatalogItem, n string) int { return strings.Compare(it.Name, n) })
	if !ok {
		return CatalogItem{}, false
	}
	return c.Items[i], true
}

// ReadItem loads an item's file and splits it into frontmatter and body, as
// skill activation needs.
func ReadItem(ctx context.Context, blobs blob.Store, it CatalogItem) (Frontmatter, []byte, error) {
	data, err := blobs.Get(ctx, it.Ref.Digest)
	if err != nil {
		return Frontmatter{}, nil, fmt.Errorf("assembly: read %s: %w", it.Path, err)
	}
	fm, body, err := ParseFrontmatter(data)
	if err != nil {
		return Frontmatter{}, nil, fmt.Errorf("assembly: %s: %w", it.Path, err)
	}
	return fm, body, nil
}

// ReadProfile is ReadItem for an agent profile (see ParseProfile).
func ReadProfile(ctx context.Context, blobs blob.Store, it CatalogItem) (Frontmatter, []byte, error) {
	data, err := blobs.Get(ctx, it.Ref.Digest)
	if err != nil {
		return Frontmatter{}, nil, fmt.Errorf("assembly: read %s: %w", it.Path, err)
	}
	fm, body, err := ParseProfile(data, it.Name+".md")
	if err != nil {
		return Frontmatter{}, nil, fmt.Errorf("assembly: %s: %w", it.Path, err)
	}
	return fm, body, nil
}

// catalogKind is what differs between the skill catalog and the agent menu.
type catalogKind struct {
	format    string
	mediaType string
	header    string // first line of the text
	withModel bool   // keep the frontmatter's model
	discover  func(vfs.Manifest) []vfs.Entry
	items     func(*catalogWire) *[]CatalogItem // the kind's array in the wire form
}

// catalogWire is the JSON document of both kinds; each kind uses one of the
// item arrays.
type catalogWire struct {
	Format   string             `json:"format"`
	Version  int                `json:"version"`
	Skills   []CatalogItem      `json:"skills,omitempty"`
	Agents   []CatalogItem      `json:"agents,omitempty"`
	Warnings []Warning          `json:"warnings"`
	Text     content.ContentRef `json:"text"`
}

// buildCatalog reads the files k discovers in trees, in tree order and then
// path order. A file that is too large, not UTF-8, has bad frontmatter or
// reuses an earlier name is left out with a warning. With no items nothing is
// stored and the catalog is nil; the warnings are returned either way.
func buildCatalog(ctx context.Context, blobs blob.Store, edges vfs.Edges, trees []Tree, limits Limits, k catalogKind) (*Catalog, []Warning, error) {
	l := limits.effective()
	var items []CatalogItem
	warnings := []Warning{}
	taken := map[string]string{} // name → path of its first holder
	for _, t := range trees {
		for _, e := range k.discover(t.Manifest) {
			abs := t.AbsPath(e.Path)
			data, w, err := readSource(ctx, blobs, t, e, l.MaxSourceBytes)
			if err != nil {
				return nil, nil, err
			}
			if w != nil {
				warnings = append(warnings, *w)
				continue
			}
			parse := ParseFrontmatter
			if k.withModel {
				parse = func(data []byte) (Frontmatter, []byte, error) { return ParseProfile(data, path.Base(e.Path)) }
			}
			fm, _, err := parse(data)
			if err != nil {
				warnings = append(warnings, Warning{Path: abs, Message: "omitted: " + err.Error()})
				continue
			}
			if first, dup := taken[fm.Name]; dup {
				warnings = append(warnings, Warning{Path: abs, Message: fmt.Sprintf("omitted: name %q is already used by %s", fm.Name, first)})
				continue
			}
			taken[fm.Name] = abs
			it := CatalogItem{Name: fm.Name, Description: fm.Description, Path: abs, Ref: e.Ref}
			if k.withModel {
				it.Model, it.Tools = fm.Model, fm.Tools
			}
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return nil, warnings, nil
	}
	slices.SortFunc(items, func(a, b CatalogItem) int { return strings.Compare(a.Name, b.Name) })

	var sb strings.Builder
	sb.WriteString(k.header + "\n")
	for _, it := range items {
		fmt.Fprintf(&sb, "- %s: %s (%s)\n", it.Name, it.Description, it.Path)
	}
	text := []byte(sb.String())
	textRef, err := blob.PutRef(ctx, blobs, text, content.MediaText, "")
	if err != nil {
		return nil, nil, fmt.Errorf("assembly: store %s text: %w", k.format, err)
	}

	w := catalogWire{Format: k.format, Version: CatalogVersion, Warnings: warnings, Text: textRef}
	*k.items(&w) = items
	data, err := content.MarshalCanonical(w)
	if err != nil {
		return nil, nil, fmt.Errorf("assembly: encode %s: %w", k.format, err)
	}
	kids := []content.Digest{textRef.Digest}
	for _, it := range items {
		kids = append(kids, it.Ref.Digest)
	}
	docRef, err := putDoc(ctx, blobs, edges, data, k.mediaType, kids)
	if err != nil {
		return nil, nil, err
	}
	c := &Catalog{Format: k.format, Items: items, Warnings: warnings, Text: textRef, Doc: docRef, Preview: preview(text)}
	return c, warnings, nil
}

// parseCatalog decodes a catalog document of kind k and checks what Find
// relies on: items sorted by name, names unique.
func parseCatalog(data []byte, k catalogKind) (*Catalog, error) {
	var w catalogWire
	if err := decodeStrict(data, &w); err != nil {
		return nil, fmt.Errorf("assembly: parse %s: %w", k.format, err)
	}
	if w.Format != k.format || w.Version != CatalogVersion {
		return nil, fmt.Errorf("assembly: parse %s: got format %q version %d", k.format, w.Format, w.Version)
	}
	items := *k.items(&w)
	if len(w.Skills)+len(w.Agents) != len(items) {
		return nil, fmt.Errorf("assembly: parse %s: items under the other catalog kind's key", k.format)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("assembly: parse %s: no items", k.format)
	}
	if err := w.Text.Validate(); err != nil {
		return nil, fmt.Errorf("assembly: parse %s: text: %w", k.format, err)
	}
	for i, it := range items {
		if err := it.Ref.Validate(); err != nil {
			return nil, fmt.Errorf("assembly: parse %s: %q: %w", k.format, it.Name, err)
		}
		if it.Name == "" || i > 0 && items[i-1].Name >= it.Name {
			return nil, fmt.Errorf("assembly: parse %s: names not unique and sorted at %q", k.format, it.Name)
		}
	}
	if w.Warnings == nil {
		w.Warnings = []Warning{}
	}
	return &Catalog{Format: w.Format, Items: items, Warnings: w.Warnings, Text: w.Text}, nil
}
