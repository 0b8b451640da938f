package assembly

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

// Instruction report format identity.
const (
	ReportFormat    = "cairn.instruction-assembly"
	ReportVersion   = 1
	ReportMediaType = "application/vnd.cairn.instruction-assembly+json"
)

// PromptRoots are the directories searched for prompt sources, in order.
var PromptRoots = []string{".cairn/prompts", ".agents/prompts"}

// Source is one discovered prompt source.
type Source struct {
	Path     string             `json:"path"` // absolute path as the model sees it
	Ref      content.ContentRef `json:"ref"`
	Size     int64              `json:"size"`
	Included bool               `json:"included"`
}

// Report is the instruction assembly report: which sources were found, which
// were included and why others were not. It holds no snapshot digest or
// workspace revision, so identical sources give an identical report.
type Report struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Mount     string    `json:"mount"`
	Workspace string    `json:"workspace"`
	Sources   []Source  `json:"sources"`
	Warnings  []Warning `json:"warnings"`
	// Instructions is the assembled text; nil when no source contributed text.
	Instructions *content.ContentRef `json:"instructions,omitempty"`
}

// Instructions is the assembled instruction text of one tree.
type Instructions struct {
	Mount     string
	Workspace string
	// Text is the assembled text (content.MediaText). It is the zero ref when
	// every source was omitted or empty: add no instruction entry then, the
	// report still records why.
	Text      content.ContentRef
	TextBytes int64
	Report    content.ContentRef // the stored Report (ReportMediaType)
	Sources   []Source
	Warnings  []Warning
	Preview   string // bounded preview of the text
}

// DiscoverPrompts returns tree t's prompt source entries in assembly order:
// for each of PromptRoots, instructions.md and then the files directly in
// instructions.d whose names end in ".md", sorted by name (byte order).
// Subdirectories of instructions.d and other files are ignored.
func DiscoverPrompts(m vfs.Manifest) []vfs.Entry {
	var out []vfs.Entry
	for _, root := range PromptRoots {
		if e, ok := vfs.Lookup(m, root+"/instructions.md"); ok {
			out = append(out, e)
		}
		// Glob segments never cross "/", so nested files do not match, and
		// files of one directory come out in name order.
		d, _ := vfs.Glob(m, root+"/instructions.d/*.md") // constant pattern: never malformed
		out = append(out, d...)
	}
	return out
}

// AssembleInstructions assembles every tree's instructions, in tree order.
// Trees without prompt sources are skipped.
func AssembleInstructions(ctx context.Context, blobs blob.Store, edges vfs.Edges, trees []Tree, limits Limits) ([]*Instructions, error) {
	var out []*Instructions
	for _, t := range trees {
		in, err := AssembleTree(ctx, blobs, edges, t, limits)
		if err != nil {
			return nil, err
		}
		if in != nil {
			out = append(out, in)
		}
	}
	return out, nil
}

// AssembleTree assembles tree t's instructions from the sources DiscoverPrompts
// finds, and stores the text and the report; nil when t has no sources.
//
// A source is omitted whole, with a warning, when it exceeds
// limits.MaxSourceBytes, is not valid UTF-8, or would bring the included
// sources past limits.MaxTotalBytes; once that total is reached every later
// source is omitted too, so a later source never appears without an earlier
// one. Instructions are never truncated.
//
// The text is built by JoinSources from the included sources.
func AssembleTree(ctx context.Context, blobs blob.Store, edges vfs.Edges, t Tree, limits Limits) (*Instructions, error) {
	entries := DiscoverPrompts(t.Manifest)
	if len(entries) == 0 {
		return nil, nil
	}
	l := limits.effective()
	sources := make([]Source, 0, len(entries))
	warnings := []Warning{}
	var texts [][]byte
	var total int64
	full := false
	for _, e := range entries {
		src := Source{Path: t.AbsPath(e.Path), Ref: e.Ref, Size: e.Size}
		var w *Warning
		switch {
		case full:
			w = &Warning{Path: src.Path, Message: fmt.Sprintf("omitted: an earlier source reached the limit of %d bytes of instructions", l.MaxTotalBytes)}
		// An oversized source is reported as such (below), not as the one
		// that filled the total.
		case e.Size <= l.MaxSourceBytes && total+e.Size > l.MaxTotalBytes:
			full = true
			w = &Warning{Path: src.Path, Message: fmt.Sprintf("omitted: %d bytes would bring the instructions past the limit of %d bytes", e.Size, l.MaxTotalBytes)}
		default:
			data, rw, err := readSource(ctx, blobs, t, e, l.MaxSourceBytes)
			if err != nil {
				return nil, err
			}
			if w = rw; w == nil {
				src.Included = true
				total += e.Size
				texts = append(texts, data)
			}
		}
		if w != nil {
			warnings = append(warnings, *w)
		}
		sources = append(sources, src)
	}

	in := &Instructions{Mount: t.Mount, Workspace: t.Workspace, Sources: sources, Warnings: warnings}
	kids := make([]content.Digest, 0, len(sources)+1)
	for _, s := range sources {
		kids = append(kids, s.Ref.Digest)
	}
	report := Report{Format: ReportFormat, Version: ReportVersion, Mount: t.Mount, Workspace: t.Workspace, Sources: sources, Warnings: warnings}
	if text := JoinSources(texts); len(text) > 0 {
		ref, err := blob.PutRef(ctx, blobs, text, content.MediaText, "")
		if err != nil {
			return nil, fmt.Errorf("assembly: store instructions of %s: %w", t.Mount, err)
		}
		in.Text, in.TextBytes, in.Preview = ref, int64(len(text)), preview(text)
		report.Instructions = &ref
		kids = append(kids, ref.Digest)
	}
	data, err := content.MarshalCanonical(report)
	if err != nil {
		return nil, fmt.Errorf("assembly: encode report of %s: %w", t.Mount, err)
	}
	if in.Report, err = putDoc(ctx, blobs, edges, data, ReportMediaType, kids); err != nil {
		return nil, err
	}
	return in, nil
}

// JoinSources is the joining rule of instructions: each source loses its
// trailing line breaks ("\n" and "\r"); sources left empty contribute nothing;
// the rest are joined with one blank line ("\n\n") and the result ends with a
// single "\n". No sources with text give an empty result.
func JoinSources(sources [][]byte) []byte {
	var parts [][]byte
	for _, s := range sources {
		if s = bytes.TrimRight(s, "\r\n"); len(s) > 0 {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return append(bytes.Join(parts, []byte("\n\n")), '\n')
}

// ParseReport decodes a stored instruction assembly report.
func ParseReport(data []byte) (*Report, error) {
	var r Report
	if err := decodeStrict(data, &r); err != nil {
		return nil, fmt.Errorf("assembly: parse report: %w", err)
	}
	if r.Format != ReportFormat || r.Version != ReportVersion {
		return nil, fmt.Errorf("assembly: parse report: format %q version %d, want %q version %d", r.Format, r.Version, ReportFormat, ReportVersion)
	}
	return &r, nil
}
