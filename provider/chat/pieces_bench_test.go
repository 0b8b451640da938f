package chat

import (
	"context"
	"fmt"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// BenchmarkLowerLongChat lowers the request of turn 1,000 of a chat of
// short turns (2,001 entries): from the blobs, and from the pieces the
// turns before kept, as a turn through an executor with Pieces does.
func BenchmarkLowerLongChat(b *testing.B) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	var entries []core.Entry
	add := func(in core.EntryInput) {
		entries = append(entries, core.Entry{ID: fmt.Sprintf("e%d", len(entries)+1), Kind: in.Kind, Role: in.Role, Content: in.Content})
	}
	text := func(kind, role, s string) {
		ref, err := blob.PutRef(ctx, blobs, []byte(s), content.MediaText, "")
		if err != nil {
			b.Fatal(err)
		}
		add(core.EntryInput{Kind: kind, Role: role, Content: ref})
	}
	text(core.EntryInstructions, "", "You are terse.")
	for turn := 1; turn <= 1000; turn++ {
		text(core.EntryMessage, core.RoleUser, fmt.Sprintf("Turn %d: a short message, as people write them.", turn))
		out, err := Decode(ctx, blobs, []byte(`{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Noted."},"finish_reason":"stop"}]}`))
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range out.Entries {
			add(in)
		}
	}
	req := provider.Request{SessionID: "s1", Model: core.ModelSelection{ProviderID: "p", APIKind: APIKind, Model: "m"}, Entries: entries}
	for _, c := range []struct {
		name   string
		pieces *provider.Pieces
	}{{"blobs", nil}, {"pieces", provider.NewPieces(64 << 20)}} {
		b.Run(c.name, func(b *testing.B) {
			req.Pieces = c.pieces
			if _, _, err := lowerWithSegments(ctx, blobs, req, LowerOptions{}); err != nil { // keeps the pieces
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := lowerWithSegments(ctx, blobs, req, LowerOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
