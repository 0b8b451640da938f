package runtime

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairn-agents/cairn/assembly"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// ActivateSkill loads the skill named name from the session's linked files
// (as they are now) and returns the skill_activation entry that puts its body
// in context, keyed "skill.<name>". The entry's provenance is the SKILL.md it
// came from. A name no linked SKILL.md declares is a *core.Rejection.
func ActivateSkill(ctx context.Context, blobs blob.Store, files Files, links []core.Link, name string) (core.EntryInput, error) {
	if files == nil || len(links) == 0 {
		return core.EntryInput{}, &core.Rejection{Kind: core.RejectUnknownReference, Message: "the session links no files, so it has no skills"}
	}
	trees, err := LinkedTrees(ctx, blobs, files, links)
	if err != nil {
		return core.EntryInput{}, err
	}
	cat, _, err := assembly.BuildSkillCatalog(ctx, blobs, files, trees, assembly.Limits{})
	if err != nil {
		return core.EntryInput{}, err
	}
	var item assembly.CatalogItem
	found := false
	if cat != nil {
		item, found = cat.Find(name)
	}
	if !found {
		return core.EntryInput{}, &core.Rejection{Kind: core.RejectUnknownReference, Message: fmt.Sprintf("no skill named %q in the linked files (skills: %s)", name, skillNames(cat))}
	}
	_, body, err := assembly.ReadItem(ctx, blobs, item)
	if err != nil {
		return core.EntryInput{}, err
	}
	// The label tells the model what this message is; the body follows as
	// written.
	text := fmt.Sprintf("Skill %q is active (%s):\n\n%s", item.Name, item.Path, body)
	ref, err := blob.PutRef(ctx, blobs, []byte(text), content.MediaText, "")
	if err != nil {
		return core.EntryInput{}, err
	}
	src := item.Ref
	return core.EntryInput{
		Kind: core.EntrySkillActivation, Key: core.SkillKeyPrefix + item.Name, Content: ref,
		TokenEstimate: provider.Estimate([]byte(text)), Preview: provider.Preview(text),
		Origin: "skill:" + item.Name, ProvenanceRef: &src,
	}, nil
}

func skillNames(c *assembly.Catalog) string {
	if c == nil || len(c.Items) == 0 {
		return "none"
	}
	names := make([]string, len(c.Items))
	for i, it := range c.Items {
		names[i] = it.Name
	}
	return strings.Join(names, ", ")
}
