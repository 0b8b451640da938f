package main

import (
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/view"
)

// A turn that only called tools leaves an assistant message without text:
// the transcript prints no empty "assistant>" line for it, and still prints
// the answers that say something.
func TestTranscriptSkipsEmptyAssistantMessages(t *testing.T) {
	empty, answer := "", "Done."
	var out strings.Builder
	p := &transcriptPrinter{out: &out}
	p.entries([]view.TranscriptEntry{
		{Kind: core.EntryMessage, Role: core.RoleAssistant, Source: core.SourceModel, Content: view.Content{Text: &empty}},
		{Kind: core.EntryMessage, Role: core.RoleAssistant, Source: core.SourceModel, Content: view.Content{Text: &answer}},
	})
	if out.String() != "assistant> Done.\n" {
		t.Fatalf("printed %q", out.String())
	}
}
