// Package storetest is the conformance suite every store.SessionLog backend
// runs, together with the blob store its appends check refs against.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// Run exercises the store.SessionLog contract, and store.Edges,
// store.Workspaces and store.Checkpoints for backends whose log or blob
// store implements them. newStores must return an empty log
// and the blob store that log checks refs against (the same object for
// backends that implement both); register cleanup with t.Cleanup.
func Run(t *testing.T, newStores func(t *testing.T) (store.SessionLog, blob.Store)) {
	tests := []struct {
		name string
		fn   func(f *fixture)
	}{
		{"AppendAtZeroCreatesSession", testAppendCreates},
		{"AppendAtZeroOnExistingSessionConflicts", testAppendZeroOnExisting},
		{"HeadConflictIsTypedAndChangesNothing", testHeadConflict},
		{"ExpectedHeadOnUnknownSessionConflicts", testHeadOnUnknown},
		{"SeqsAreContiguousFromOne", testContiguousSeqs},
		{"ReadAfterPagesInOrder", testReadAfter},
		{"ReadBeforePagesChronologically", testReadBefore},
		{"UnknownSessionIsNotFound", testUnknownSession},
		{"InvalidAppendsAreRejected", testInvalidAppends},
		{"MissingBlobRejectsWholeAppend", testMissingBlob},
		{"HashShapedTextIsNotARef", testHashShapedText},
		{"AppendRecordsRoots", testRoots},
		{"LifecycleProjection", testLifecycle},
		{"UnfinishedListsSessionsWithRuns", testUnfinished},
		{"SessionsPagesByID", testSessions},
		{"ConcurrentAppendersExactlyOneWins", testConcurrentSameHead},
		{"ConcurrentAppendsToDifferentSessions", testConcurrentSessions},
		{"EventsRoundTripByteExact", testRoundTrip},
		{"ReturnedEventsDoNotAliasTheLog", testNoAliasing},
		{"EdgesRecordChildrenIdempotently", testEdges},
		{"EdgesRequireParentAndChildren", testEdgesMissing},
		{"EdgesRejectZeroAndSelf", testEdgesInvalid},
		{"BatchWritesBlobsAndEdgesTogether", testBatch},
		{"BatchWithAnAbsentChildRecordsNoEdge", testBatchMissing},
		{"BatchWithAnInvalidEdgeWritesNothing", testBatchInvalid},
		{"AppendBatchStoresItsBlobsWithTheEvents", testAppendBatch},
		{"WorkspacesCreateReadList", testWorkspaceCreateRead},
		{"WorkspaceDuplicateCreateFails", testWorkspaceDuplicate},
		{"WorkspaceMoveHeadIncrementsRevision", testWorkspaceMove},
		{"WorkspaceStaleRevisionConflictsAndChangesNothing", testWorkspaceStale},
		{"WorkspaceConcurrentMoversExactlyOneWins", testWorkspaceConcurrent},
		{"WorkspaceHeadMustExist", testWorkspaceMissingHead},
		{"WorkspaceInvalidRequestsAreRejected", testWorkspaceInvalid},
		{"SnapshotsAreIdempotentRecords", testSnapshots},
		{"CheckpointsLatestAtOrBelow", testCheckpointsLatest},
		{"CheckpointRePutReplaces", testCheckpointRePut},
		{"CheckpointRequiresSessionHeadAndBlob", testCheckpointRequirements},
		{"CheckpointInvalidRequestsAreRejected", testCheckpointInvalid},
		{"CheckpointPruneDeletesOlderOnes", testCheckpointPrune},
		{"ForkReadsThroughItsSource", testForkReadsThroughSource},
		{"ForkIsClampedToItsPoint", testForkIsClampedToItsPoint},
		{"ForkOfForkResolvesRecursively", testForkOfFork},
		{"ForkDepthIsLimited", testForkDepthLimit},
		{"ForkRequestsAreChecked", testForkRequestsRejected},
		{"LineageOfForksAndClones", testLineage},
		{"ForkHasItsOwnRootsAndCheckpoints", testForkRootsAndCheckpoints},
		{"DeleteOnlyClosedSessions", testDeleteClosedOnly},
		{"DeleteRespectsForks", testDeleteWithForks},
		{"SessionsNewestFirst", testSessionsNewestFirst},
		{"ImportCreatesSessionsWithLineage", testImportCreatesSessionsWithLineage},
		{"ImportIsAllOrNothing", testImportIsAllOrNothing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, blobs := newStores(t)
			tc.fn(&fixture{t: t, ctx: context.Background(), log: log, blobs: blobs})
		})
	}
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	log   store.SessionLog
	blobs blob.Store
}

// --- proposals built from core's payload types ---

var testModel = core.ModelSelection{ProviderID: "fake", APIKind: core.APIOpenAIResponses, Model: "model-1"}

func proposal(kind string, at int64, payload any, joins ...string) core.Proposal {
	return core.NewProposal(at, joins, kind, payload)
}

func opened(id string, at int64) core.Proposal {
	return proposal(core.KindSessionOpened, at, core.SessionOpened{SessionID: id, Config: core.SessionConfig{Model: testModel}})
}

func accepted(runID string, queued bool, at int64) core.Proposal {
	return proposal(core.KindRunAccepted, at, core.RunAccepted{RunID: runID, InputFingerprint: "fp-" + runID, Queued: queued}, "run:"+runID)
}

// refs is an event whose payload holds the given refs as exact strings, next
// to other JSON, the way content refs sit inside real payloads.
func refs(at int64, refs ...content.ContentRef) core.Proposal {
	return proposal("test.refs", at, map[string]any{"input": refs, "note": "not a ref"})
}

func started(runID string, at int64) core.Proposal {
	return proposal(core.KindRunStarted, at, core.RunStarted{RunID: runID}, "run:"+runID)
}

func completed(runID string, at int64) core.Proposal {
	return proposal(core.KindRunCompleted, at, core.RunCompleted{RunID: runID}, "run:"+runID)
}

func note(text string) core.Proposal {
	return proposal("test.note", 1, map[string]string{"text": text})
}

func textRef(d content.Digest) content.ContentRef {
	return content.ContentRef{Digest: d, MediaType: content.MediaText}
}

// --- assertions ---

func (f *fixture) append(id string, head int64, ps ...core.Proposal) []core.Event {
	f.t.Helper()
	evs, err := f.log.Append(f.ctx, id, head, ps)
	if err != nil {
		f.t.Fatalf("Append(%s, head %d, %d proposals): %v", id, head, len(ps), err)
	}
	if len(evs) != len(ps) {
		f.t.Fatalf("Append returned %d events for %d proposals", len(evs), len(ps))
	}
	for i, p := range ps {
		if want := p.Committed(head + int64(i) + 1); !eventEqual(evs[i], want) {
			f.t.Fatalf("Append returned event %d = %s, want %s", i, show(evs[i]), show(want))
		}
	}
	return evs
}

func (f *fixture) put(data string) content.Digest {
	f.t.Helper()
	d, err := f.blobs.Put(f.ctx, []byte(data))
	if err != nil {
		f.t.Fatalf("blob Put: %v", err)
	}
	return d
}

func (f *fixture) session(id string) core.Lifecycle {
	f.t.Helper()
	l, err := f.log.Session(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Session(%s): %v", id, err)
	}
	return l
}

func (f *fixture) head(id string) int64 { f.t.Helper(); return f.session(id).Head }

func (f *fixture) readAfter(id string, after int64, limit int) []core.Event {
	f.t.Helper()
	evs, err := f.log.ReadAfter(f.ctx, id, after, limit)
	if err != nil {
		f.t.Fatalf("ReadAfter(%s, %d, %d): %v", id, after, limit, err)
	}
	return evs
}

func (f *fixture) readBefore(id string, before int64, limit int) []core.Event {
	f.t.Helper()
	evs, err := f.log.ReadBefore(f.ctx, id, before, limit)
	if err != nil {
		f.t.Fatalf("ReadBefore(%s, %d, %d): %v", id, before, limit, err)
	}
	return evs
}

func (f *fixture) wantSeqs(what string, evs []core.Event, want ...int64) {
	f.t.Helper()
	got := make([]int64, len(evs))
	for i, ev := range evs {
		got[i] = ev.Seq
	}
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		f.t.Fatalf("%s: seqs %v, want %v", what, got, want)
	}
}

func (f *fixture) wantNotFound(id string) {
	f.t.Helper()
	if _, err := f.log.Session(f.ctx, id); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("Session(%s): %v, want ErrSessionNotFound", id, err)
	}
	if evs, err := f.log.ReadAfter(f.ctx, id, 0, 0); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("ReadAfter(%s) = %d events, %v; want ErrSessionNotFound", id, len(evs), err)
	}
}

func (f *fixture) wantConflict(err error, id string, expected, actual int64) {
	f.t.Helper()
	var hc *store.HeadConflictError
	if !errors.As(err, &hc) {
		f.t.Fatalf("error %v (%T) is not a *store.HeadConflictError", err, err)
	}
	if !errors.Is(err, store.ErrHeadConflict) {
		f.t.Fatalf("error %v does not match store.ErrHeadConflict", err)
	}
	if hc.SessionID != id || hc.Expected != expected || hc.Actual != actual {
		f.t.Fatalf("conflict = %+v, want session %s expected %d actual %d", *hc, id, expected, actual)
	}
}

func (f *fixture) wantMissing(err error, want ...content.Digest) {
	f.t.Helper()
	var me *blob.MissingError
	if !errors.As(err, &me) {
		f.t.Fatalf("error %v (%T) is not a *blob.MissingError", err, err)
	}
	if !errors.Is(err, blob.ErrNotFound) {
		f.t.Fatalf("error %v does not match blob.ErrNotFound", err)
	}
	want = slices.Clone(want)
	content.SortDigests(want)
	if !slices.Equal(me.Digests, want) {
		f.t.Fatalf("missing digests %v, want %v", me.Digests, want)
	}
}

// eventEqual compares events byte for byte; absent and empty joins are equal.
func eventEqual(a, b core.Event) bool {
	return a.Seq == b.Seq && a.ObservedAtMs == b.ObservedAtMs && a.Kind == b.Kind &&
		a.Version == b.Version && bytes.Equal(a.Payload, b.Payload) &&
		slices.Equal(a.Joins, b.Joins)
}

func show(ev core.Event) string {
	return fmt.Sprintf("{seq %d at %d joins %q %s v%d %s}", ev.Seq, ev.ObservedAtMs, ev.Joins, ev.Kind, ev.Version, ev.Payload)
}

// --- tests ---

func testAppendCreates(f *fixture) {
	f.wantNotFound("s1")
	f.append("s1", 0, opened("s1", 1000))
	l := f.session("s1")
	want := core.Lifecycle{SessionID: "s1", Status: core.SessionStatusOpen, Model: testModel, CreatedAtMs: 1000, UpdatedAtMs: 1000, Head: 1}
	if l != want {
		f.t.Fatalf("lifecycle %+v, want %+v", l, want)
	}
	f.wantSeqs("ReadAfter", f.readAfter("s1", 0, 0), 1)

	// The catalog is keyed by the id appended under, whatever payloads say,
	// and a log need not start with session.opened.
	f.append("s2", 0, opened("some-other-id", 5))
	f.append("s3", 0, note("first"))
	for _, id := range []string{"s2", "s3"} {
		if l := f.session(id); l.SessionID != id || l.Head != 1 {
			f.t.Fatalf("Session(%s) = %+v", id, l)
		}
	}
}

func testAppendZeroOnExisting(f *fixture) {
	f.append("s1", 0, opened("s1", 1))
	_, err := f.log.Append(f.ctx, "s1", 0, []core.Proposal{opened("s1", 2)})
	f.wantConflict(err, "s1", 0, 1)
	f.wantSeqs("after conflict", f.readAfter("s1", 0, 0), 1)
}

func testHeadConflict(f *fixture) {
	f.append("s1", 0, opened("s1", 1), note("a"))
	before := f.session("s1")
	for _, expected := range []int64{1, 3} {
		_, err := f.log.Append(f.ctx, "s1", expected, []core.Proposal{note("stale"), completed("r", 9)})
		f.wantConflict(err, "s1", expected, 2)
	}
	if after := f.session("s1"); after != before {
		f.t.Fatalf("lifecycle changed by rejected append: %+v, was %+v", after, before)
	}
	f.wantSeqs("after conflicts", f.readAfter("s1", 0, 0), 1, 2)
}

func testHeadOnUnknown(f *fixture) {
	_, err := f.log.Append(f.ctx, "ghost", 4, []core.Proposal{opened("ghost", 1)})
	f.wantConflict(err, "ghost", 4, 0)
	f.wantNotFound("ghost")
}

func testContiguousSeqs(f *fixture) {
	var head int64
	for _, n := range []int{1, 3, 1, 5} {
		ps := make([]core.Proposal, n)
		for i := range ps {
			ps[i] = note(fmt.Sprintf("%d", head+int64(i)+1))
		}
		evs := f.append("s1", head, ps...)
		for i, ev := range evs {
			if ev.Seq != head+int64(i)+1 {
				f.t.Fatalf("event %d of batch at head %d has seq %d", i, head, ev.Seq)
			}
		}
		head += int64(n)
		if got := f.head("s1"); got != head {
			f.t.Fatalf("head %d, want %d", got, head)
		}
	}
	evs := f.readAfter("s1", 0, 0)
	f.wantSeqs("all", evs, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	for _, ev := range evs {
		if want := fmt.Sprintf(`{"text":"%d"}`, ev.Seq); string(ev.Payload) != want {
			f.t.Fatalf("seq %d holds payload %s, want %s", ev.Seq, ev.Payload, want)
		}
	}
}

func appendTen(f *fixture) {
	ps := make([]core.Proposal, 10)
	for i := range ps {
		ps[i] = note(fmt.Sprintf("%d", i+1))
	}
	f.append("s1", 0, ps[:4]...)
	f.append("s1", 4, ps[4:]...)
}

func testReadAfter(f *fixture) {
	appendTen(f)
	f.wantSeqs("ReadAfter(0,3)", f.readAfter("s1", 0, 3), 1, 2, 3)
	f.wantSeqs("ReadAfter(3,3)", f.readAfter("s1", 3, 3), 4, 5, 6)
	f.wantSeqs("ReadAfter(8,5)", f.readAfter("s1", 8, 5), 9, 10)
	f.wantSeqs("ReadAfter(10,5)", f.readAfter("s1", 10, 5))
	f.wantSeqs("ReadAfter(20,5)", f.readAfter("s1", 20, 5))
	f.wantSeqs("ReadAfter(6,0)", f.readAfter("s1", 6, 0), 7, 8, 9, 10)
	f.wantSeqs("ReadAfter(-1,2)", f.readAfter("s1", -1, 2), 1, 2)
}

func testReadBefore(f *fixture) {
	appendTen(f)
	f.wantSeqs("ReadBefore(11,3)", f.readBefore("s1", 11, 3), 8, 9, 10)
	f.wantSeqs("ReadBefore(8,3)", f.readBefore("s1", 8, 3), 5, 6, 7)
	f.wantSeqs("ReadBefore(3,5)", f.readBefore("s1", 3, 5), 1, 2)
	f.wantSeqs("ReadBefore(1,5)", f.readBefore("s1", 1, 5))
	f.wantSeqs("ReadBefore(0,5)", f.readBefore("s1", 0, 5))
	f.wantSeqs("ReadBefore(100,2)", f.readBefore("s1", 100, 2), 9, 10)
	f.wantSeqs("ReadBefore(5,0)", f.readBefore("s1", 5, 0), 1, 2, 3, 4)
}

func testUnknownSession(f *fixture) {
	f.append("known", 0, opened("known", 1))
	f.wantNotFound("unknown")
	if _, err := f.log.ReadBefore(f.ctx, "unknown", 10, 10); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("ReadBefore(unknown): %v, want ErrSessionNotFound", err)
	}
}

func testInvalidAppends(f *fixture) {
	good := opened("s1", 1)
	cases := []struct {
		name string
		id   string
		head int64
		ps   []core.Proposal
	}{
		{"no proposals", "s1", 0, nil},
		{"empty session id", "", 0, []core.Proposal{good}},
		{"negative head", "s1", -1, []core.Proposal{good}},
		{"empty kind", "s1", 0, []core.Proposal{good, {Kind: "", Payload: json.RawMessage(`{}`)}}},
		{"payload not JSON", "s1", 0, []core.Proposal{good, {Kind: "test.note", Payload: json.RawMessage(`{"a":`)}}},
		{"no payload", "s1", 0, []core.Proposal{good, {Kind: "test.note"}}},
		{"two JSON values", "s1", 0, []core.Proposal{good, {Kind: "test.note", Payload: json.RawMessage(`{} {}`)}}},
		{"NUL in session id", "s1\x00", 0, []core.Proposal{good}},
		{"session id not UTF-8", "s1\xff", 0, []core.Proposal{good}},
		{"kind not UTF-8", "s1", 0, []core.Proposal{good, {Kind: "test.\xff", Payload: json.RawMessage(`{}`)}}},
		{"NUL in join", "s1", 0, []core.Proposal{good, {Kind: "test.note", Joins: []string{"run:\x00"}, Payload: json.RawMessage(`{}`)}}},
	}
	for _, tc := range cases {
		evs, err := f.log.Append(f.ctx, tc.id, tc.head, tc.ps)
		if !errors.Is(err, store.ErrInvalidAppend) {
			f.t.Fatalf("%s: Append = %d events, %v; want ErrInvalidAppend", tc.name, len(evs), err)
		}
	}
	f.wantNotFound("s1")
}

func testMissingBlob(f *fixture) {
	present := f.put("present")
	absentB := content.Sum([]byte("absent B"))
	absentC := content.Sum([]byte("absent C"))

	// A new session: nothing at all may be created.
	_, err := f.log.Append(f.ctx, "s1", 0, []core.Proposal{
		opened("s1", 1),
		accepted("r1", false, 2),
		refs(3, textRef(absentC), textRef(present), textRef(absentB)),
	})
	f.wantMissing(err, absentB, absentC)
	f.wantNotFound("s1")
	if ids, err := f.log.Unfinished(f.ctx); err != nil || len(ids) != 0 {
		f.t.Fatalf("Unfinished after rejected append = %v, %v; want none", ids, err)
	}

	// An existing session: the head and events stay as they were, even when
	// only a later proposal of the batch is at fault.
	f.append("s2", 0, opened("s2", 1))
	before := f.session("s2")
	_, err = f.log.Append(f.ctx, "s2", 1, []core.Proposal{
		refs(2, textRef(present)),
		proposal("test.refs", 3, map[string]any{"list": []content.Digest{absentC, absentB, absentC}}),
	})
	f.wantMissing(err, absentB, absentC)
	if after := f.session("s2"); after != before {
		f.t.Fatalf("lifecycle changed by rejected append: %+v, was %+v", after, before)
	}
	f.wantSeqs("events after rejected append", f.readAfter("s2", 0, 0), 1)

	// Once the bytes exist the same append goes through.
	f.put("absent B")
	f.put("absent C")
	f.append("s1", 0, opened("s1", 1), accepted("r1", false, 2), refs(3, textRef(absentC), textRef(present), textRef(absentB)))
}

// testHashShapedText: a ref is a ref because its proposal declares it (a
// typed field), never because a string looks like one. Text that is exactly
// a digest of bytes nobody stored appends, and roots nothing.
func testHashShapedText(f *fixture) {
	d := content.Sum([]byte("never stored"))
	ps := []core.Proposal{
		opened("s1", 1),
		proposal("test.note", 2, map[string]string{
			"text":      d.String(),
			"inside":    "see " + d.String() + " for details",
			"uppercase": "sha256:" + fmt.Sprintf("%X", d[:]),
			d.String():  "as a key",
		}),
	}
	f.append("s1", 0, ps...)
	f.wantSeqs("events", f.readAfter("s1", 0, 0), 1, 2)
	if rl, ok := f.log.(rootLister); ok {
		if got, err := rl.Roots(f.ctx, "s1"); err != nil || len(got) != 0 {
			f.t.Fatalf("Roots = %v, %v; text rooted a blob", got, err)
		}
	}
}

// rootLister is implemented by backends that expose the roots an append recorded.
type rootLister interface {
	Roots(ctx context.Context, sessionID string) ([]content.Digest, error)
}

func testRoots(f *fixture) {
	a, b := f.put("root a"), f.put("root b")
	f.append("s1", 0, opened("s1", 1), refs(2, textRef(b), textRef(a)))
	f.append("s1", 2, proposal("test.refs", 3, []content.Digest{a, a}))
	rl, ok := f.log.(rootLister)
	if !ok {
		f.t.Skip("backend does not list roots")
	}
	got, err := rl.Roots(f.ctx, "s1")
	if err != nil {
		f.t.Fatalf("Roots: %v", err)
	}
	want := []content.Digest{a, b}
	content.SortDigests(want)
	if !slices.Equal(got, want) {
		f.t.Fatalf("Roots = %v, want %v", got, want)
	}
}

func testLifecycle(f *fixture) {
	f.append("s1", 0, opened("s1", 100))
	f.append("s1", 1, accepted("r1", false, 200))
	l := f.session("s1")
	if l.ActiveRunID != "r1" || l.LastRunID != "r1" || l.LastRunStatus != core.StatusRunning || l.Head != 2 || l.UpdatedAtMs != 200 {
		f.t.Fatalf("after run.accepted: %+v", l)
	}
	f.append("s1", 2, started("r1", 300), accepted("r2", true, 310))
	l = f.session("s1")
	if l.ActiveRunID != "r1" || l.QueuedRuns != 1 || l.LastRunID != "r2" || l.LastRunStatus != core.StatusQueued {
		f.t.Fatalf("after queueing r2: %+v", l)
	}
	f.append("s1", 4, completed("r1", 400), started("r2", 410), completed("r2", 420))
	l = f.session("s1")
	want := core.Lifecycle{
		SessionID: "s1", Status: core.SessionStatusOpen, Model: testModel, CreatedAtMs: 100, UpdatedAtMs: 420,
		Head: 7, LastRunID: "r2", LastRunStatus: core.StatusCompleted,
	}
	if l != want {
		f.t.Fatalf("after both runs completed: %+v, want %+v", l, want)
	}
	f.append("s1", 7, proposal(core.KindSessionClosed, 500, core.SessionClosed{Reason: "done"}))
	if l := f.session("s1"); l.Status != core.SessionStatusClosed || l.Head != 8 {
		f.t.Fatalf("after session.closed: %+v", l)
	}
}

func (f *fixture) wantUnfinished(want ...string) {
	f.t.Helper()
	got, err := f.log.Unfinished(f.ctx)
	if err != nil {
		f.t.Fatalf("Unfinished: %v", err)
	}
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		f.t.Fatalf("Unfinished = %q, want %q", got, want)
	}
}

func testUnfinished(f *fixture) {
	f.append("s-idle", 0, opened("s-idle", 1))
	f.wantUnfinished()
	f.append("s-b", 0, opened("s-b", 1), accepted("rb", false, 2))
	f.append("s-a", 0, opened("s-a", 1), accepted("ra", false, 2))
	f.append("s-c", 0, opened("s-c", 1))
	f.wantUnfinished("s-a", "s-b")
	f.append("s-b", 2, started("rb", 3), completed("rb", 4))
	f.wantUnfinished("s-a")
	// A queued run with no active one still needs a host.
	f.append("s-c", 1, accepted("rc", true, 2))
	f.wantUnfinished("s-a", "s-c")
	f.append("s-a", 2, completed("ra", 5))
	f.append("s-c", 2, started("rc", 3), completed("rc", 4))
	f.wantUnfinished()
}

func testSessions(f *fixture) {
	for _, id := range []string{"s-c", "s-a", "s-e", "s-b", "s-d"} {
		f.append(id, 0, opened(id, 1))
	}
	page := func(after string, limit int, want ...string) {
		f.t.Helper()
		ls, err := f.log.Sessions(f.ctx, after, limit)
		if err != nil {
			f.t.Fatalf("Sessions(%q, %d): %v", after, limit, err)
		}
		var got []string
		for _, l := range ls {
			got = append(got, l.SessionID)
			if l.Head != 1 || l.Status != core.SessionStatusOpen {
				f.t.Fatalf("Sessions returned %+v", l)
			}
		}
		if !slices.Equal(got, want) {
			f.t.Fatalf("Sessions(%q, %d) = %q, want %q", after, limit, got, want)
		}
	}
	page("", 2, "s-a", "s-b")
	page("s-b", 2, "s-c", "s-d")
	page("s-d", 2, "s-e")
	page("s-e", 2)
	page("s-bb", 0, "s-c", "s-d", "s-e")
	page("", 0, "s-a", "s-b", "s-c", "s-d", "s-e")
}

func testConcurrentSameHead(f *fixture) {
	f.append("s1", 0, opened("s1", 1))
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			_, errs[i] = f.log.Append(f.ctx, "s1", 1, []core.Proposal{note(fmt.Sprintf("w%d", i)), note("second")})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				f.t.Fatalf("writers %d and %d both appended at head 1", winner, i)
			}
			winner = i
			continue
		}
		f.wantConflict(err, "s1", 1, 3)
	}
	if winner < 0 {
		f.t.Fatalf("no writer won: %v", errs)
	}
	evs := f.readAfter("s1", 0, 0)
	f.wantSeqs("events", evs, 1, 2, 3)
	if want := fmt.Sprintf(`{"text":"w%d"}`, winner); string(evs[1].Payload) != want {
		f.t.Fatalf("seq 2 = %s, want the winner's %s", evs[1].Payload, want)
	}
}

func testConcurrentSessions(f *fixture) {
	const sessions, appends = 6, 8
	var wg sync.WaitGroup
	errs := make([]error, sessions)
	for i := range sessions {
		wg.Go(func() {
			id := fmt.Sprintf("s%d", i)
			if _, err := f.log.Append(f.ctx, id, 0, []core.Proposal{opened(id, 1)}); err != nil {
				errs[i] = err
				return
			}
			for h := int64(1); h <= appends; h++ {
				if _, err := f.log.Append(f.ctx, id, h, []core.Proposal{note(fmt.Sprint(h))}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			f.t.Fatalf("session s%d: %v", i, err)
		}
		if h := f.head(fmt.Sprintf("s%d", i)); h != appends+1 {
			f.t.Fatalf("session s%d head %d, want %d", i, h, appends+1)
		}
	}
	ls, err := f.log.Sessions(f.ctx, "", 0)
	if err != nil || len(ls) != sessions {
		f.t.Fatalf("Sessions = %d, %v; want %d", len(ls), err, sessions)
	}
}

func testRoundTrip(f *fixture) {
	ps := []core.Proposal{
		opened("s1", 1_700_000_000_123),
		{
			ObservedAtMs: 1<<53 + 1, // beyond float64 precision: must not pass through one
			Joins:        []string{"run:r1", "turn:r1/2", "call:c-ü"},
			Kind:         "test.raw",
			Version:      3,
			// Whitespace, key order, escapes and number spelling are kept as sent.
			Payload: json.RawMessage("{ \"z\" : 1.50,\n\t\"a\":\"\\u00e9 é \\\"q\\\" <&>\", \"n\": 12345678901234567890, \"e\":[ ] }"),
		},
		{ObservedAtMs: -5, Kind: "test.empty_joins", Version: 1, Joins: []string{}, Payload: json.RawMessage(`"just a string"`)},
		{ObservedAtMs: 0, Kind: "test.null", Version: 0, Payload: json.RawMessage(`null`)},
	}
	evs := f.append("s1", 0, ps...)
	read := f.readAfter("s1", 0, 0)
	if len(read) != len(ps) {
		f.t.Fatalf("read %d events, want %d", len(read), len(ps))
	}
	for i := range ps {
		if !eventEqual(read[i], evs[i]) {
			f.t.Fatalf("event %d read back as %s, appended as %s", i, show(read[i]), show(evs[i]))
		}
	}
	back := f.readBefore("s1", 5, 0)
	for i := range ps {
		if !eventEqual(back[i], evs[i]) {
			f.t.Fatalf("ReadBefore event %d = %s, want %s", i, show(back[i]), show(evs[i]))
		}
	}
}

func testNoAliasing(f *fixture) {
	p := note("original")
	evs := f.append("s1", 0, p)
	p.Payload[2] = 'X' // callers may reuse their buffers
	evs[0].Payload[3] = 'Y'
	read := f.readAfter("s1", 0, 0)
	read[0].Payload[4] = 'Z'
	if got := f.readAfter("s1", 0, 0); string(got[0].Payload) != `{"text":"original"}` {
		f.t.Fatalf("stored payload changed through a caller's slice: %s", got[0].Payload)
	}
}

// edges returns the backend's store.Edges, found on the log or the blob
// store; backends without retention edges skip these tests.
func (f *fixture) edges() store.Edges {
	f.t.Helper()
	if e, ok := f.log.(store.Edges); ok {
		return e
	}
	if e, ok := f.blobs.(store.Edges); ok {
		return e
	}
	f.t.Skip("backend does not record retention edges")
	return nil
}

func (f *fixture) wantChildren(e store.Edges, parent content.Digest, want ...content.Digest) {
	f.t.Helper()
	got, err := e.Children(f.ctx, parent)
	if err != nil {
		f.t.Fatalf("Children(%s): %v", parent, err)
	}
	want = slices.Clone(want)
	content.SortDigests(want)
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		f.t.Fatalf("Children(%s) = %v, want %v", parent, got, want)
	}
}

func testEdges(f *fixture) {
	e := f.edges()
	manifest, other := f.put("manifest"), f.put("other manifest")
	a, b, c := f.put("file a"), f.put("file b"), f.put("file c")
	f.wantChildren(e, manifest)

	// Unsorted, repeated children are recorded once each.
	if err := e.PutEdges(f.ctx, manifest, []content.Digest{c, a, c}); err != nil {
		f.t.Fatalf("PutEdges: %v", err)
	}
	f.wantChildren(e, manifest, a, c)
	// Again, overlapping: a no-op for known edges, new ones are added.
	for range 2 {
		if err := e.PutEdges(f.ctx, manifest, []content.Digest{a, b}); err != nil {
			f.t.Fatalf("PutEdges again: %v", err)
		}
	}
	f.wantChildren(e, manifest, a, b, c)
	// Edges belong to their parent; a child may have several parents, and a
	// parent with no children is a no-op.
	if err := e.PutEdges(f.ctx, other, []content.Digest{a}); err != nil {
		f.t.Fatalf("PutEdges(other): %v", err)
	}
	if err := e.PutEdges(f.ctx, c, nil); err != nil {
		f.t.Fatalf("PutEdges(no children): %v", err)
	}
	f.wantChildren(e, other, a)
	f.wantChildren(e, manifest, a, b, c)
	f.wantChildren(e, a)
	f.wantChildren(e, c)
	f.wantChildren(e, content.Sum([]byte("never stored")))
}

func testEdgesMissing(f *fixture) {
	e := f.edges()
	parent, present := f.put("parent"), f.put("present child")
	absentA, absentB := content.Sum([]byte("absent child A")), content.Sum([]byte("absent child B"))
	absentParent := content.Sum([]byte("absent parent"))

	// Every absent digest is listed, and none of the edges is written.
	err := e.PutEdges(f.ctx, parent, []content.Digest{absentB, present, absentA})
	f.wantMissing(err, absentA, absentB)
	f.wantChildren(e, parent)
	err = e.PutEdges(f.ctx, absentParent, []content.Digest{present, absentA})
	f.wantMissing(err, absentParent, absentA)
	f.wantChildren(e, absentParent)
	f.wantMissing(e.PutEdges(f.ctx, absentParent, nil), absentParent)

	f.put("absent child A")
	f.put("absent child B")
	if err := e.PutEdges(f.ctx, parent, []content.Digest{absentB, present, absentA}); err != nil {
		f.t.Fatalf("PutEdges once the children exist: %v", err)
	}
	f.wantChildren(e, parent, absentA, absentB, present)
}

func testEdgesInvalid(f *fixture) {
	e := f.edges()
	parent, child := f.put("parent"), f.put("child")
	for name, req := range map[string]struct {
		parent   content.Digest
		children []content.Digest
	}{
		"self edge":   {parent, []content.Digest{child, parent}},
		"zero parent": {content.Digest{}, []content.Digest{child}},
		"zero child":  {parent, []content.Digest{child, {}}},
	} {
		if err := e.PutEdges(f.ctx, req.parent, req.children); !errors.Is(err, store.ErrInvalidEdge) {
			f.t.Fatalf("%s: PutEdges = %v, want ErrInvalidEdge", name, err)
		}
	}
	f.wantChildren(e, parent)
}

// batchWriter is the backend's store.BatchWriter: every backend that
// records edges writes batches.
func (f *fixture) batchWriter() store.BatchWriter {
	f.t.Helper()
	w, ok := f.edges().(store.BatchWriter)
	if !ok {
		f.t.Fatalf("%T records edges but does not write batches", f.edges())
	}
	return w
}

func (f *fixture) wantBlob(d content.Digest, want string) {
	f.t.Helper()
	got, err := f.blobs.Get(f.ctx, d)
	if err != nil || string(got) != want {
		f.t.Fatalf("Get(%s) = %q, %v; want %q", d, got, err, want)
	}
}

func testBatch(f *fixture) {
	w, e := f.batchWriter(), f.edges()
	old := f.put("stored before")
	index, page, chunk := []byte("index"), []byte("page"), []byte("chunk")
	di, dp, dc := content.Sum(index), content.Sum(page), content.Sum(chunk)
	err := w.WriteBatch(f.ctx, store.Batch{
		Blobs: [][]byte{chunk, page, index, chunk}, // a blob twice is stored once
		Edges: []store.Edge{{Parent: di, Children: []content.Digest{dp, old}}, {Parent: dp, Children: []content.Digest{dc}}},
	})
	if err != nil {
		f.t.Fatalf("WriteBatch: %v", err)
	}
	f.wantBlob(di, "index")
	f.wantBlob(dp, "page")
	f.wantBlob(dc, "chunk")
	f.wantChildren(e, di, dp, old)
	f.wantChildren(e, dp, dc)
	// Blobs alone, and edges alone, are batches too.
	if err := w.WriteBatch(f.ctx, store.Batch{Blobs: [][]byte{[]byte("alone")}}); err != nil {
		f.t.Fatalf("WriteBatch(blobs only): %v", err)
	}
	f.wantBlob(content.Sum([]byte("alone")), "alone")
	if err := w.WriteBatch(f.ctx, store.Batch{Edges: []store.Edge{{Parent: old, Children: []content.Digest{dc}}}}); err != nil {
		f.t.Fatalf("WriteBatch(edges only): %v", err)
	}
	f.wantChildren(e, old, dc)
}

func testBatchMissing(f *fixture) {
	w, e := f.batchWriter(), f.edges()
	parent := []byte("parent")
	dp := content.Sum(parent)
	held := f.put("held")
	absent := content.Sum([]byte("absent"))
	err := w.WriteBatch(f.ctx, store.Batch{
		Blobs: [][]byte{parent},
		Edges: []store.Edge{{Parent: dp, Children: []content.Digest{held}}, {Parent: held, Children: []content.Digest{absent}}},
	})
	f.wantMissing(err, absent)
	// Neither edge is recorded, the valid first one included.
	f.wantChildren(e, dp)
	f.wantChildren(e, held)
}

func testBatchInvalid(f *fixture) {
	w, e := f.batchWriter(), f.edges()
	child := f.put("child")
	parent := []byte("a parent never stored")
	err := w.WriteBatch(f.ctx, store.Batch{
		Blobs: [][]byte{parent},
		Edges: []store.Edge{{Parent: content.Sum(parent), Children: []content.Digest{child}}, {Parent: child, Children: []content.Digest{child}}},
	})
	if !errors.Is(err, store.ErrInvalidEdge) {
		f.t.Fatalf("WriteBatch with a self edge = %v, want ErrInvalidEdge", err)
	}
	if missing, err := f.blobs.Missing(f.ctx, []content.Digest{content.Sum(parent)}); err != nil || len(missing) != 1 {
		f.t.Fatalf("the batch's blob after an invalid edge: missing %v, %v; want it not stored", missing, err)
	}
	f.wantChildren(e, child)
}

func testAppendBatch(f *fixture) {
	a, ok := f.log.(store.BatchAppender)
	if !ok {
		f.t.Fatalf("%T appends no batches: every store commits a batch with the append it comes with", f.log)
	}
	input := []byte("the run's input")
	d := content.Sum(input)
	absent := content.Sum([]byte("never stored"))
	f.append("s1", 0, opened("s1", 1))
	notStored := func(what string) {
		f.t.Helper()
		if missing, err := f.blobs.Missing(f.ctx, []content.Digest{d}); err != nil || len(missing) != 1 {
			f.t.Fatalf("%s: the batch's blob is stored (missing %v, %v)", what, missing, err)
		}
	}
	// A head conflict and a ref to a blob in neither the batch nor the
	// store each reject the append, and the batch's blob is not stored.
	_, err := a.AppendBatch(f.ctx, "s1", 5, []core.Proposal{refs(2, textRef(d))}, store.Batch{Blobs: [][]byte{input}})
	f.wantConflict(err, "s1", 5, 1)
	notStored("after a head conflict")
	_, err = a.AppendBatch(f.ctx, "s1", 1, []core.Proposal{refs(2, textRef(d), textRef(absent))}, store.Batch{Blobs: [][]byte{input}})
	f.wantMissing(err, absent)
	notStored("after a missing ref")
	f.wantSeqs("events after rejected appends", f.readAfter("s1", 0, 0), 1)

	// The events may name the batch's blobs; both are stored, and the blob
	// is a root of the session.
	evs, err := a.AppendBatch(f.ctx, "s1", 1, []core.Proposal{refs(2, textRef(d))}, store.Batch{Blobs: [][]byte{input}})
	if err != nil || len(evs) != 1 || evs[0].Seq != 2 {
		f.t.Fatalf("AppendBatch = %v, %v; want event 2", evs, err)
	}
	f.wantBlob(d, string(input))
	f.wantSeqs("events after the append", f.readAfter("s1", 0, 0), 1, 2)
	roots, err := f.log.(interface {
		Roots(context.Context, string) ([]content.Digest, error)
	}).Roots(f.ctx, "s1")
	if err != nil || !slices.Contains(roots, d) {
		f.t.Fatalf("roots %v (%v); want the batch's blob among them", roots, err)
	}

	// A batch's edges commit with the events; an edge to a blob in neither
	// the batch nor the store rejects the append, and none of it is kept.
	e, ok := f.log.(store.Edges)
	if !ok {
		f.t.Fatalf("%T appends batches but records no edges", f.log)
	}
	list, answer := []byte("a request's segment list"), []byte("the answer")
	withEdge := func(children ...content.Digest) store.Batch {
		return store.Batch{Blobs: [][]byte{list, answer}, Edges: []store.Edge{{Parent: content.Sum(list), Children: children}}}
	}
	_, err = a.AppendBatch(f.ctx, "s1", 2, []core.Proposal{refs(3, textRef(content.Sum(list)))}, withEdge(content.Sum(answer), absent))
	f.wantMissing(err, absent)
	if missing, err := f.blobs.Missing(f.ctx, []content.Digest{content.Sum(list)}); err != nil || len(missing) != 1 {
		f.t.Fatalf("after an edge to a missing blob: the batch's list is stored (missing %v, %v)", missing, err)
	}
	f.wantChildren(e, content.Sum(list))
	f.wantSeqs("events after an edge to a missing blob", f.readAfter("s1", 0, 0), 1, 2)
	if _, err := a.AppendBatch(f.ctx, "s1", 2, []core.Proposal{refs(3, textRef(content.Sum(list)))}, withEdge(content.Sum(answer), d)); err != nil {
		f.t.Fatalf("AppendBatch with an edge: %v", err)
	}
	f.wantChildren(e, content.Sum(list), content.Sum(answer), d)
	f.wantSeqs("events after the append with an edge", f.readAfter("s1", 0, 0), 1, 2, 3)
}
