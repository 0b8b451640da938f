package core_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

func TestCheckpoint_UnusableCheckpointsAreTypedErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("hi")})
	h.next()
	good, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.DecodeCheckpoint(good); err != nil {
		t.Fatalf("a fresh checkpoint is unusable: %v", err)
	}
	cases := map[string]string{
		"not json":           "{",
		"unknown version":    strings.Replace(string(good), `"version":1`, `"version":99`, 1),
		"other format":       strings.Replace(string(good), core.CheckpointFormat, "something.else", 1),
		"active not running": strings.Replace(string(good), `"status":"running"`, `"status":"completed"`, 1),
		"duplicate entry":    strings.Replace(string(good), `"entries":[`, `"entries":[{"entryId":"e1","kind":"message","source":"user","content":{"digest":"sha256:`+strings.Repeat("0", 64)+`","mediaType":"text/plain"},"tokenEstimate":{"tokens":1,"quality":"heuristic"}},`, 1),
	}
	for name, data := range cases {
		if data == string(good) {
			t.Fatalf("%s: the case did not change the checkpoint", name)
		}
		_, err := core.DecodeCheckpoint([]byte(data))
		var ce *core.CheckpointError
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %v, want *CheckpointError", name, err)
		}
	}
}

// An ended run keeps only what reads of it need, so a checkpoint grows by a
// small fixed amount per past run, not by each run's inputs and turns; a
// checkpoint written before runs settled decodes to the same state.
func TestCheckpoint_EndedRunsKeepOnlyWhatReadsNeed(t *testing.T) {
	h := newHarness(t, testConfig("search"))
	long := strings.Repeat("a long question about acorns ", 20) // a 580-byte preview
	for i := range 4 {
		id := fmt.Sprintf("r%d", i)
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: id, SubmissionID: "sub-" + id, Input: input(long, long)})
		h.callTools(call("c"+id, "search"))
		w := h.expectTools()
		h.mustAdmit(toolResult(h.tick(), w, "c"+id, core.CallOK, `{"hits":3}`))
		h.answer("done " + id)
		h.expectIdle()
	}
	r := h.state().Run("r3")
	if r == nil || r.Status != core.StatusCompleted || r.Turns != 2 || r.Output == nil || r.SubmissionID != "sub-r3" || r.InputFingerprint == "" {
		t.Fatalf("ended run r3 = %+v; reads need its status, turns, output and submission", r)
	}
	if r.Input != nil || r.Turn != nil {
		t.Fatalf("ended run r3 kept its input or turn: %+v", r)
	}
	data, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	var cp struct{ Runs []json.RawMessage }
	if err := json.Unmarshal(data, &cp); err != nil || len(cp.Runs) != 4 {
		t.Fatalf("checkpoint runs: %d, %v", len(cp.Runs), err)
	}
	for i, rec := range cp.Runs {
		if len(rec) > 400 {
			t.Fatalf("ended run %d takes %d bytes of every checkpoint: %s", i, len(rec), rec)
		}
	}
	// A checkpoint written before ended runs settled decodes settled, so
	// its state equals a replay's and its successors stay small.
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["runs"].([]any)[0].(map[string]any)["input"] = []any{map[string]any{"content": text("old input"), "preview": long}}
	old, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := core.DecodeCheckpoint(old)
	if err != nil {
		t.Fatal(err)
	}
	if r := decoded.Run("r0"); r == nil || r.Input != nil {
		t.Fatalf("an old checkpoint's ended run decoded with its input: %+v", r)
	}
	// A resubmission of an ended run's submission is still recognised.
	a := h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r-again", SubmissionID: "sub-r3", Input: input(long, long)})
	if !a.Duplicate || a.RunID != "r3" {
		t.Fatalf("resubmitting sub-r3 = %+v, want the ended run r3", a)
	}
}

// chatTurns runs turns from to to-1 of a chat: a question, its answer.
func chatTurns(h *harness, from, to int) {
	for i := from; i < to; i++ {
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: fmt.Sprintf("r%d", i), Input: input(fmt.Sprintf("question %d", i))})
		h.answer(fmt.Sprintf("answer %d", i))
		h.expectIdle()
	}
}

// A chunked checkpoint of a long session encodes only what changed since
// the last one: one more run adds a few chunks, not a copy of the session.
func TestCheckpoint_ChunkedCheckpointEncodesWhatChanged(t *testing.T) {
	h := newHarness(t, testConfig())
	chatTurns(h, 0, 300)
	first, err := core.EncodeCheckpointParts(h.state(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 300 runs: 600 entries and 300 run records, about 28 chunks in a few
	// pages; a first checkpoint stores them all, with each page's edges.
	if len(first.New) < 20 || len(first.Named) < 2 || len(first.Edges) != len(first.Named) {
		t.Fatalf("a first checkpoint of 300 runs: %d blobs, %d pages named, %d with edges; want at least 20, 2, and edges for every page", len(first.New), len(first.Named), len(first.Edges))
	}
	chatTurns(h, 300, 301)
	next, err := core.EncodeCheckpointParts(h.state(), first.Memo)
	if err != nil {
		t.Fatal(err)
	}
	// The last entry chunk, run chunk and their pages changed.
	if len(next.New) > 5 || len(next.Edges) > 2 {
		t.Fatalf("one more run encoded %d blobs again, %d pages; want the changed ones (at most 5 and 2)", len(next.New), len(next.Edges))
	}
	stored := map[content.Digest][]byte{}
	for _, b := range append(first.New, next.New...) {
		stored[b.Digest] = b.Data
	}
	// A reader asks for the pages, then for their chunks.
	have := map[content.Digest][]byte{}
	for round := 0; ; round++ {
		need, err := core.CheckpointNeeds(next.Index, have)
		if err != nil || round > 2 {
			t.Fatalf("round %d: CheckpointNeeds = %d, %v", round, len(need), err)
		}
		if len(need) == 0 {
			break
		}
		for _, d := range need {
			have[d] = stored[d]
		}
	}
	got, err := core.DecodeCheckpointParts(next.Index, have)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustEncode(t, got), mustEncode(t, h.state()); string(a) != string(b) {
		t.Fatalf("the chunked checkpoint decodes to another state")
	}
	refs, err := core.CheckpointChunkRefs(next.Index)
	if err != nil || !slices.Equal(refs, next.Named) {
		t.Fatalf("CheckpointChunkRefs = %v, %v; want the pages %v", refs, err, next.Named)
	}
	// Damaged or missing chunks make the checkpoint unusable, typed.
	damaged := maps.Clone(have)
	for _, b := range next.New {
		if strings.Contains(string(b.Data), "cairn.reducer-state.entries") {
			damaged[b.Digest] = []byte(`{"format":"cairn.reducer-state.entries","items":[]}`)
		}
	}
	for name, cs := range map[string]map[content.Digest][]byte{"missing": nil, "damaged": damaged} {
		var ce *core.CheckpointError
		if _, err := core.DecodeCheckpointParts(next.Index, cs); !errors.As(err, &ce) {
			t.Errorf("%s chunks: %v, want *CheckpointError", name, err)
		}
	}
	if _, err := core.DecodeCheckpoint(next.Index); err == nil {
		t.Error("DecodeCheckpoint of a chunked index without its chunks succeeded")
	}
}

// An event applied to a run that had ended (the reducer takes a cancel
// request for one) changes its record: the memo, which knows ended runs by
// how they ended, encodes that run's chunk again, and the checkpoint is
// the one without a memo.
func TestCheckpoint_MemoSeesAnEndedRunChange(t *testing.T) {
	h := newHarness(t, testConfig())
	for i := range 40 {
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: fmt.Sprintf("r%d", i), Input: input(fmt.Sprintf("question %d", i))})
		h.answer(fmt.Sprintf("answer %d", i))
		h.expectIdle()
	}
	parts, err := core.EncodeCheckpointParts(h.state(), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := h.state()
	ev := core.Event{Seq: st.Head + 1, ObservedAtMs: h.tick(), Kind: core.KindRunCancelRequested, Version: core.EventVersion, Payload: []byte(`{"runId":"r3"}`)}
	if err := st.Apply(ev); err != nil {
		t.Fatal(err)
	}
	if !st.Run("r3").CancelRequested {
		t.Fatal("the cancel request did not reach the ended run")
	}
	got, err := core.EncodeCheckpointParts(st, parts.Memo)
	if err != nil {
		t.Fatal(err)
	}
	want, err := core.EncodeCheckpointParts(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Index, want.Index) {
		t.Fatalf("the memo kept the run's old chunk:\n got %s\nwant %s", got.Index, want.Index)
	}
}

// memoCheckpoint encodes st through memo and without one, and fails unless
// the two indexes are the same bytes.
func memoCheckpoint(t *testing.T, st *core.State, memo *core.CheckpointMemo) (parts, fresh core.CheckpointParts) {
	t.Helper()
	parts, err := core.EncodeCheckpointParts(st, memo)
	if err != nil {
		t.Fatal(err)
	}
	if fresh, err = core.EncodeCheckpointParts(st, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(parts.Index, fresh.Index) {
		t.Fatalf("at %d: the memo changed the checkpoint:\n got %s\nwant %s", st.Head, parts.Index, fresh.Index)
	}
	return parts, fresh
}

// Checkpoints through the memo are byte for byte those without one over a
// long session whose context grows in place, loses an entry in the middle
// (a new array), has a keyed entry replaced, and grows past its array's
// capacity: the memo knows a chunk by its items' addresses only while
// they are the same entries.
func TestCheckpoint_MemoEqualsNoMemoAsTheContextGrowsAndChanges(t *testing.T) {
	h := newHarness(t, testConfig())
	var memo *core.CheckpointMemo
	checkpoint := func(at int) {
		t.Helper()
		parts, fresh := memoCheckpoint(t, h.state(), memo)
		all := map[content.Digest]bool{}
		for _, b := range fresh.New {
			all[b.Digest] = true
		}
		for _, b := range parts.New {
			if !all[b.Digest] {
				t.Fatalf("turn %d: the memo encoded a blob the checkpoint does not hold", at)
			}
		}
		memo = parts.Memo
	}
	for i := range 600 {
		h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: fmt.Sprintf("r%d", i), Input: input(fmt.Sprintf("question %d", i))})
		h.answer(fmt.Sprintf("answer %d", i))
		h.expectIdle()
		switch i {
		case 100, 350:
			h.mustAdmit(core.AppendContext{AtMs: h.tick(), Entries: []core.EntryInput{entryText(core.EntryMessage, "notes", fmt.Sprintf("notes at %d", i))}})
		case 200:
			h.mustAdmit(core.RemoveContext{AtMs: h.tick(), EntryIDs: []string{h.state().Context()[50].ID}})
		}
		if i%25 == 0 || i%25 == 7 {
			checkpoint(i)
		}
	}
}
