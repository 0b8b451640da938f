package temporal_test

import (
	"context"
	"slices"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/core"
	ctemporal "github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store"
)

// A workflow task that appended and was then lost is replaced by one that
// decides the same, stamped with a later clock. Append takes that as done
// (and answers the stored times) instead of a conflict, after which the
// command would be decided again and applied twice.
func TestAppend_SameDecisionsFromALostTaskAreAlreadyAppended(t *testing.T) {
	blobs := blob.NewMemory()
	st := memStore{Memory: store.NewMemory(blobs), Store: blobs}
	acts := ctemporal.NewActivities(func(context.Context, string) (ctemporal.Store, error) { return st, nil }, nil, nil)
	ctx := context.Background()
	open := core.NewProposal(10, nil, core.KindSessionOpened, core.SessionOpened{SessionID: "s1",
		Config: core.SessionConfig{Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"}}})
	note := func(at int64, id string) core.Proposal {
		return core.NewProposal(at, []string{"run:r1"}, core.KindRunCancelRequested, core.RunCancelRequested{RunID: id})
	}
	if _, err := acts.Append(ctx, ctemporal.AppendIn{SessionID: "s1", Proposals: []core.Proposal{open, note(20, "r1")}}); err != nil {
		t.Fatal(err)
	}
	// The same decisions, a later clock: already there, at the stored times.
	out, err := acts.Append(ctx, ctemporal.AppendIn{SessionID: "s1", Proposals: []core.Proposal{open, note(99, "r1")}})
	if err != nil || out.Head != 2 || !slices.Equal(out.ObservedAtMs, []int64{10, 20}) {
		t.Fatalf("Append = %+v, %v; want head 2 at the stored times", out, err)
	}
	// Other decisions at that head are a conflict.
	if _, err := acts.Append(ctx, ctemporal.AppendIn{SessionID: "s1", Proposals: []core.Proposal{open, note(20, "r2")}}); err == nil {
		t.Fatal("different decisions were taken as appended")
	}
}
