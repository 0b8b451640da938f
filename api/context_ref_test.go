package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

func TestContextAppendByRefAdmitsAndTouchesTheBlob(t *testing.T) {
	bg := context.Background()
	e := newEnv(t)
	mem := e.blobs.Store.(*blob.Memory)
	now := time.UnixMilli(1_000_000)
	mem.SetClock(func() time.Time { return now })
	sid := e.create(t, api.CreateSessionParams{})

	notes := "# Release notes\n\nThe collector keeps what sessions root."
	put, err := e.c.PutBlob(bg, []byte(notes), "text/markdown")
	if err != nil {
		t.Fatal(err)
	}
	now = time.UnixMilli(2_000_000)
	got, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Key: "notes", Ref: refp(put.Ref)})
	if err != nil {
		t.Fatalf("append by ref: %v", err)
	}
	var entry *core.Entry
	for _, en := range e.context(t, sid).Entries {
		if en.ID == got.EntryID {
			entry = &en
		}
	}
	if entry == nil {
		t.Fatalf("entry %s is not in context", got.EntryID)
	}
	if entry.Content.Digest != put.Ref.Digest || entry.Content.MediaType != "text/markdown" || entry.Preview != notes || entry.Role != core.RoleUser {
		t.Fatalf("entry = %+v, want the uploaded ref as a user message", entry)
	}
	// The admission renewed the blob's grace (a read would not have).
	for _, m := range mem.Entries() {
		if m.Digest == put.Ref.Digest && m.TouchedAt.UnixMilli() != 2_000_000 {
			t.Fatalf("touched at %d after the admission, want 2000000", m.TouchedAt.UnixMilli())
		}
	}
}

func TestContextAppendByRefRejectsWithoutChanges(t *testing.T) {
	bg := context.Background()
	e := newEnv(t)
	sid := e.create(t, api.CreateSessionParams{})
	absent := content.ContentRef{Digest: content.Sum([]byte("never uploaded")), MediaType: "text/plain"}
	rpcErr := e.rejected(t, sid, api.KindMissingBlob, func() error {
		_, err := e.c.AppendContext(bg, api.ContextAppendParams{SessionID: sid, Kind: core.EntryMessage, Ref: refp(absent)})
		return err
	})
	if rpcErr.Message == "" {
		t.Fatal("missing_blob without a message")
	}
	if missing, err := e.blobs.Missing(bg, []content.Digest{absent.Digest}); err != nil || len(missing) != 1 {
		t.Fatalf("a rejected admission created the blob: missing = %v, %v", missing, err)
	}

	img, err := e.c.PutBlob(bg, []byte{0x89, 'P', 'N', 'G'}, "image/png")
	if err != nil {
		t.Fatal(err)
	}
	text, err := e.c.PutBlob(bg, []byte("hello"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	notUTF8, err := e.c.PutBlob(bg, []byte{0xff, 0xfe, 'x'}, "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]api.ContextAppendParams{
		"neither":      {SessionID: sid, Kind: core.EntryMessage},
		"both":         {SessionID: sid, Kind: core.EntryMessage, Text: "hello", Ref: refp(text.Ref)},
		"not text":     {SessionID: sid, Kind: core.EntryMessage, Ref: refp(img.Ref)},
		"invalid UTF8": {SessionID: sid, Kind: core.EntryMessage, Ref: refp(notUTF8.Ref)},
	} {
		t.Run(name, func(t *testing.T) {
			e.rejected(t, sid, api.KindInvalidParams, func() error {
				_, err := e.c.AppendContext(bg, p)
				return err
			})
		})
	}
	// A ref without a digest cannot be encoded by the Go client; send it raw.
	e.rejected(t, sid, api.KindInvalidParams, func() error {
		resp := e.postOne(t, `{"jsonrpc":"2.0","id":1,"method":"session/context/append","params":{"sessionId":"`+sid+`","kind":"message","ref":{"mediaType":"text/plain"}}}`)
		if resp.Error == nil {
			return nil
		}
		return resp.Error
	})
}
