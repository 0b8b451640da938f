package provider_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
)

// A kept prefix is taken by a request whose entries start with its ids:
// at the same addresses (extended in place, as a State's entries are), or
// in another array once compared; never by one that is shorter or
// differs anywhere in it.
func TestKeptPrefixIsTakenByTheRequestsThatStartWithIt(t *testing.T) {
	msgs := make([]core.Entry, 0, 16)
	for i := range 4 {
		msgs = append(msgs, core.Entry{ID: fmt.Sprintf("e%d", i), Kind: core.EntryMessage, Role: core.RoleUser})
	}
	req := provider.Request{SessionID: "s1", Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIAnthropicMessages, Model: "m"}}
	pieces := provider.NewPieces(1 << 20)
	pieces.Scope(core.APIAnthropicMessages, req, "").KeepPrefixState(msgs, len(msgs), "state after e3", 16, provider.Kept{})

	differs := slices.Clone(msgs)
	differs[2].ID = "other"
	for _, c := range []struct {
		name    string
		entries []core.Entry
		want    int
	}{
		{"the same array, extended in place", append(msgs, core.Entry{ID: "e4"}), 4},
		{"the same array, as long", msgs, 4},
		{"another array with the same ids", append(slices.Clone(msgs), core.Entry{ID: "e5"}), 4},
		{"another array with another id", differs, 0},
		{"the same array, shorter", msgs[:3], 0},
		{"none", nil, 0},
	} {
		got := pieces.Scope(core.APIAnthropicMessages, req, "").Prefix(c.entries)
		if got.Entries != c.want || (c.want > 0) != (got.State == "state after e3") {
			t.Errorf("%s: took %d entries and state %v, want %d", c.name, got.Entries, got.State, c.want)
		}
	}
	// A caller that breaks Request.Entries' rule and replaces the last
	// entry in place is still caught: the last id is always looked at.
	msgs[3] = core.Entry{ID: "replaced"}
	if got := pieces.Scope(core.APIAnthropicMessages, req, "").Prefix(msgs); got.Entries != 0 {
		t.Errorf("the last entry replaced in place: took %d entries, want none", got.Entries)
	}
}
