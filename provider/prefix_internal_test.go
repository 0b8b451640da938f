package provider

import (
	"runtime"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// A kept prefix does not keep the entries it was kept from in memory: the
// pieces' bound counts what a prefix holds, and a session's entries are
// not part of it.
func TestKeptPrefixLetsTheEntriesGo(t *testing.T) {
	pieces := NewPieces(1 << 20)
	req := Request{SessionID: "s1", Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIAnthropicMessages, Model: "m"}}
	func() {
		entries := make([]core.Entry, 1000)
		for i := range entries {
			entries[i].ID = "e" + string(rune('a'+i%26))
		}
		pieces.Scope(core.APIAnthropicMessages, req, "").KeepPrefixState(entries, len(entries), "state", 16, Kept{})
	}()
	v, ok := pieces.Get(pieces.Scope(core.APIAnthropicMessages, req, "").prefixKey())
	if !ok {
		t.Fatal("no prefix kept")
	}
	runtime.GC()
	runtime.GC()
	if v.(*loweredPrefix).first.Value() != nil {
		t.Fatal("the kept prefix still holds the entries it was kept from")
	}
}
