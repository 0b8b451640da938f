package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// seedBatch is how many events one append commits; the store takes a batch
// in one transaction, so a 10,000-event session is written in seconds.
const seedBatch = 500

// seedNotes is how many keyed messages a seeded session's context holds.
const seedNotes = 40

// seedTexts are the messages a seeded session cycles through. Blobs are
// content-addressed, so a long session stores each only once.
var seedTexts = func() []string {
	topics := []string{"the release checklist", "the migration guide", "flaky tests in CI", "the changelog wording",
		"a slow query in the report", "the retention policy", "the cache prefix", "an unclear error message"}
	var out []string
	for i, topic := range topics {
		out = append(out,
			fmt.Sprintf("Could you look at %s and tell me what to change first?", topic),
			fmt.Sprintf("Here is what I found about %s.\n\n1. The first part reads well.\n2. The second part needs an example%s.",
				topic, strings.Repeat(", and a sentence on why it matters", i%3)))
	}
	return out
}()

// seedSession writes a session of exactly n events (n >= 1) straight into
// the store: its opening, then user and assistant messages by turns (keyed,
// so that later ones replace earlier ones in context), and
// a checkpoint at its head. The core admits every command, as it would for
// a host, so the events are what a real session of appended messages
// holds. Call it before a host starts, so no host has the session loaded.
func seedSession(ctx context.Context, t testing.TB, st *sqlite.Store, id string, n int, start time.Time) {
	t.Helper()
	refs := make([]core.EntryInput, len(seedTexts))
	for i, text := range seedTexts {
		ref, err := blob.PutRef(ctx, st, []byte(text), content.MediaText, "")
		if err != nil {
			t.Fatal(err)
		}
		role := core.RoleUser
		if i%2 == 1 {
			role = core.RoleAssistant
		}
		refs[i] = core.EntryInput{Kind: core.EntryMessage, Role: role, Content: ref,
			TokenEstimate: provider.Estimate([]byte(text)), Preview: provider.Preview(text)}
	}
	state := core.NewState()
	var pending []core.Proposal
	committed := int64(0)
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if _, err := st.Append(ctx, id, committed, pending); err != nil {
			t.Fatalf("seeding %s: %v", id, err)
		}
		committed += int64(len(pending))
		pending = pending[:0]
	}
	admit := func(cmd core.Command) {
		a, err := core.Admit(state, cmd)
		if err != nil {
			t.Fatalf("seeding %s: %v", id, err)
		}
		for _, p := range a.Proposals {
			if err := state.Apply(p.Committed(state.Head + 1)); err != nil {
				t.Fatalf("seeding %s: %v", id, err)
			}
			pending = append(pending, p)
		}
		if len(pending) >= seedBatch {
			flush()
		}
	}
	at := func(i int) int64 { return start.Add(time.Duration(i) * 7 * time.Second).UnixMilli() }
	admit(core.OpenSession{AtMs: at(0), SessionID: id, Config: core.SessionConfig{Model: fakeModel}})
	for i := 1; state.Head < int64(n); i++ {
		// Keyed notes replace each other, so the context stays at most
		// seedNotes entries however long the session grows, as compaction
		// would keep it; each admission then costs the same.
		in := refs[(i-1)%len(refs)]
		in.Key = fmt.Sprintf("note.%02d", (i-1)%seedNotes)
		admit(core.AppendContext{AtMs: at(i), Entries: []core.EntryInput{in}})
	}
	flush()
	// A host checkpoints an idle session; so does the seed, or every read
	// of the session's state would replay it from the start.
	if err := runtime.WriteCheckpoint(ctx, st, st, state); err != nil {
		t.Fatalf("seeding %s: %v", id, err)
	}
}
