package provider_test

import (
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// Pieces holds at most its bound, dropping the least recently used piece
// first, and never keeps a piece larger than the bound.
func TestPiecesAreBoundedByBytesLeastRecentlyUsedFirst(t *testing.T) {
	const size = 1000 // each piece's declared size; the key and overhead come on top
	p := provider.NewPieces(3*size + 3*200)
	for _, k := range []string{"a", "b", "c"} {
		p.Put([]byte(k), k, size)
	}
	if _, ok := p.Get([]byte("a")); !ok { // a is now the most recently used
		t.Fatal("a was not kept")
	}
	p.Put([]byte("d"), "d", size) // over the bound: b, the least recently used, goes
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if v, ok := p.Get([]byte(k)); ok != want || (ok && v != k) {
			t.Errorf("Get(%q) = %v, %v; want kept %v", k, v, ok, want)
		}
	}
	p.Put([]byte("huge"), "huge", 10*size)
	if _, ok := p.Get([]byte("huge")); ok {
		t.Error("a piece larger than the bound was kept")
	}
	if _, ok := p.Get([]byte("d")); !ok {
		t.Error("a piece too large to keep evicted the others")
	}

	key := []byte("e")
	p.Put(key, "e", size)
	key[0] = 'f' // the caller reuses its key buffer
	if v, ok := p.Get([]byte("e")); !ok || v != "e" {
		t.Errorf("a piece is not kept under the key it was put with: %v, %v", v, ok)
	}

	var none *provider.Pieces // keeps nothing, and says so
	none.Put([]byte("a"), "a", 1)
	if _, ok := none.Get([]byte("a")); ok {
		t.Error("a nil Pieces kept a piece")
	}
	if k := none.Scope(core.APIChatCompletions, provider.Request{}, "").AppendKey(nil, core.Entry{ID: "e1"}); len(k) != 0 {
		t.Errorf("the zero scope made key %q", k)
	}
}

// A piece's key changes with every entry field lowering reads, with the
// request's API kind, session, model and options, and with the entries
// it covers.
func TestPieceKeysNameEverythingLoweringReads(t *testing.T) {
	p := provider.NewPieces(1 << 20)
	req := provider.Request{SessionID: "s1", Model: core.ModelSelection{APIKind: core.APIChatCompletions, Model: "m"}}
	e := core.Entry{ID: "e1", Key: "k", Kind: core.EntryMessage, Role: core.RoleUser, CallID: "c1",
		Content: content.Ref([]byte("hi"), content.MediaText, "")}
	base := p.Scope(core.APIChatCompletions, req, "").AppendKey(nil, e)

	edits := map[string]func(*core.Entry){
		"id":            func(e *core.Entry) { e.ID = "e2" },
		"key":           func(e *core.Entry) { e.Key = "k2" },
		"kind":          func(e *core.Entry) { e.Kind = core.EntryCatalog },
		"role":          func(e *core.Entry) { e.Role = core.RoleAssistant },
		"call id":       func(e *core.Entry) { e.CallID = "c2" },
		"digest":        func(e *core.Entry) { e.Content.Digest = content.Sum([]byte("ho")) },
		"media type":    func(e *core.Entry) { e.Content.MediaType = content.MediaJSON },
		"provider kind": func(e *core.Entry) { e.Content.ProviderKind = "x" },
	}
	seen := map[string]string{string(base): "base"}
	add := func(name string, key []byte) {
		if other, ok := seen[string(key)]; ok {
			t.Errorf("%s gives the key of %s", name, other)
		}
		seen[string(key)] = name
	}
	for name, edit := range edits {
		f := e
		edit(&f)
		add(name, p.Scope(core.APIChatCompletions, req, "").AppendKey(nil, f))
	}
	other := req
	other.SessionID = "s2"
	add("session", p.Scope(core.APIChatCompletions, other, "").AppendKey(nil, e))
	other = req
	other.Model.Model = "m2"
	add("model", p.Scope(core.APIChatCompletions, other, "").AppendKey(nil, e))
	add("API kind", p.Scope(core.APIOpenAIResponses, req, "").AppendKey(nil, e))
	add("variant", p.Scope(core.APIChatCompletions, req, "reasoning").AppendKey(nil, e))
	f := e
	f.ID = "e2"
	add("two entries", p.Scope(core.APIChatCompletions, req, "").AppendKey(nil, e, f))
	// Fields run into each other only by their lengths: "ab"+"c" is not "a"+"bc".
	g, h := e, e
	g.ID, g.Key = "ab", "c"
	h.ID, h.Key = "a", "bc"
	add("ab|c", p.Scope(core.APIChatCompletions, req, "").AppendKey(nil, g))
	add("a|bc", p.Scope(core.APIChatCompletions, req, "").AppendKey(nil, h))
}
