package storetest

import (
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

// checkpoints returns the backend's store.Checkpoints, found on the log or
// the blob store; backends without checkpoints skip these tests.
func (f *fixture) checkpoints() store.Checkpoints {
	f.t.Helper()
	if c, ok := f.log.(store.Checkpoints); ok {
		return c
	}
	if c, ok := f.blobs.(store.Checkpoints); ok {
		return c
	}
	f.t.Skip("backend does not store checkpoints")
	return nil
}

// sessionWith creates a session of n events.
func (f *fixture) sessionWith(id string, n int) {
	f.t.Helper()
	f.append(id, 0, opened(id, 1))
	for i := 1; i < n; i++ {
		f.append(id, int64(i), note(fmt.Sprintf("%s %d", id, i)))
	}
}

func (f *fixture) putCheckpoint(cps store.Checkpoints, id string, seq int64, d content.Digest) {
	f.t.Helper()
	if err := cps.PutCheckpoint(f.ctx, id, seq, d); err != nil {
		f.t.Fatalf("PutCheckpoint(%s, %d): %v", id, seq, err)
	}
}

func (f *fixture) wantLatest(cps store.Checkpoints, id string, atOrBelow, wantSeq int64, want content.Digest) {
	f.t.Helper()
	seq, d, err := cps.LatestCheckpoint(f.ctx, id, atOrBelow)
	if err != nil || seq != wantSeq || d != want {
		f.t.Fatalf("LatestCheckpoint(%s, %d) = %d, %s, %v; want %d, %s", id, atOrBelow, seq, d, err, wantSeq, want)
	}
}

func (f *fixture) wantNoCheckpoint(cps store.Checkpoints, id string, atOrBelow int64) {
	f.t.Helper()
	seq, d, err := cps.LatestCheckpoint(f.ctx, id, atOrBelow)
	if !errors.Is(err, store.ErrCheckpointNotFound) {
		f.t.Fatalf("LatestCheckpoint(%s, %d) = %d, %s, %v; want ErrCheckpointNotFound", id, atOrBelow, seq, d, err)
	}
}

func testCheckpointsLatest(f *fixture) {
	cps := f.checkpoints()
	f.sessionWith("s1", 9)
	f.sessionWith("s2", 3)
	f.wantNoCheckpoint(cps, "s1", 0)
	f.wantNoCheckpoint(cps, "ghost", 0)
	c2, c5, c9, other := f.put("checkpoint 2"), f.put("checkpoint 5"), f.put("checkpoint 9"), f.put("other session")
	// Written out of order: the latest is by seq, not by time of writing.
	f.putCheckpoint(cps, "s1", 5, c5)
	f.putCheckpoint(cps, "s1", 9, c9)
	f.putCheckpoint(cps, "s1", 2, c2)
	f.putCheckpoint(cps, "s2", 3, other)
	for _, c := range []struct {
		atOrBelow, seq int64
		d              content.Digest
	}{
		{0, 9, c9}, {-1, 9, c9}, {100, 9, c9}, {9, 9, c9}, {8, 5, c5}, {5, 5, c5}, {4, 2, c2}, {2, 2, c2},
	} {
		f.wantLatest(cps, "s1", c.atOrBelow, c.seq, c.d)
	}
	f.wantNoCheckpoint(cps, "s1", 1)
	f.wantLatest(cps, "s2", 0, 3, other)
	f.wantNoCheckpoint(cps, "s2", 2)
	f.wantNoCheckpoint(cps, "s", 0) // a prefix of a session id is another session
	// The checkpointed blob and a checkpoint at the head of a session both work.
	f.append("s2", 3, note("more"))
	f.putCheckpoint(cps, "s2", 4, c9)
	f.wantLatest(cps, "s2", 0, 4, c9)
}

func testCheckpointRePut(f *fixture) {
	cps := f.checkpoints()
	f.sessionWith("s1", 4)
	d1, d2 := f.put("checkpoint a"), f.put("checkpoint b")
	f.putCheckpoint(cps, "s1", 3, d1)
	f.putCheckpoint(cps, "s1", 3, d1) // a retry
	f.wantLatest(cps, "s1", 0, 3, d1)
	f.putCheckpoint(cps, "s1", 3, d2) // a replacement
	f.wantLatest(cps, "s1", 0, 3, d2)
	f.wantLatest(cps, "s1", 3, 3, d2)
	f.wantNoCheckpoint(cps, "s1", 2)
}

func testCheckpointRequirements(f *fixture) {
	cps := f.checkpoints()
	d := f.put("checkpoint")
	if err := cps.PutCheckpoint(f.ctx, "ghost", 1, d); !errors.Is(err, store.ErrSessionNotFound) {
		f.t.Fatalf("PutCheckpoint(unknown session) = %v, want ErrSessionNotFound", err)
	}
	f.wantNoCheckpoint(cps, "ghost", 0)

	f.sessionWith("s1", 3)
	for _, past := range []int64{4, 100} {
		if err := cps.PutCheckpoint(f.ctx, "s1", past, d); !errors.Is(err, store.ErrInvalidCheckpoint) {
			f.t.Fatalf("PutCheckpoint(seq %d past head 3) = %v, want ErrInvalidCheckpoint", past, err)
		}
	}
	f.wantNoCheckpoint(cps, "s1", 0)

	absent := content.Sum([]byte("absent checkpoint"))
	f.wantMissing(cps.PutCheckpoint(f.ctx, "s1", 2, absent), absent)
	f.wantNoCheckpoint(cps, "s1", 0)
	// A rejected replacement leaves the old checkpoint in place.
	f.putCheckpoint(cps, "s1", 2, d)
	f.wantMissing(cps.PutCheckpoint(f.ctx, "s1", 2, absent), absent)
	f.wantLatest(cps, "s1", 0, 2, d)

	// Once the blob exists, the same request succeeds.
	f.put("absent checkpoint")
	f.putCheckpoint(cps, "s1", 2, absent)
	f.wantLatest(cps, "s1", 0, 2, absent)
}

func testCheckpointInvalid(f *fixture) {
	cps := f.checkpoints()
	f.sessionWith("s1", 2)
	d := f.put("checkpoint")
	for _, c := range []struct {
		id  string
		seq int64
		d   content.Digest
	}{
		{"", 1, d}, {"s1", 0, d}, {"s1", -1, d}, {"s1", 1, content.Digest{}},
	} {
		if err := cps.PutCheckpoint(f.ctx, c.id, c.seq, c.d); !errors.Is(err, store.ErrInvalidCheckpoint) {
			f.t.Fatalf("PutCheckpoint(%q, %d, %s) = %v, want ErrInvalidCheckpoint", c.id, c.seq, c.d, err)
		}
	}
	f.wantNoCheckpoint(cps, "s1", 0)
}

func testCheckpointPrune(f *fixture) {
	cps := f.checkpoints()
	f.sessionWith("s1", 6)
	f.sessionWith("s2", 6)
	ds := map[int64]content.Digest{}
	for _, seq := range []int64{1, 3, 5, 6} {
		ds[seq] = f.put(fmt.Sprintf("checkpoint %d", seq))
		f.putCheckpoint(cps, "s1", seq, ds[seq])
		f.putCheckpoint(cps, "s2", seq, ds[seq])
	}
	n, err := cps.PruneCheckpoints(f.ctx, "s1", 5)
	if err != nil || n != 2 {
		f.t.Fatalf("PruneCheckpoints(s1, 5) = %d, %v; want 2", n, err)
	}
	f.wantNoCheckpoint(cps, "s1", 4)
	f.wantLatest(cps, "s1", 5, 5, ds[5])
	f.wantLatest(cps, "s1", 0, 6, ds[6])
	// Another session's checkpoints stay.
	f.wantLatest(cps, "s2", 4, 3, ds[3])
	if n, err := cps.PruneCheckpoints(f.ctx, "s1", 5); err != nil || n != 0 {
		f.t.Fatalf("PruneCheckpoints(s1, 5) again = %d, %v; want 0", n, err)
	}
	if n, err := cps.PruneCheckpoints(f.ctx, "ghost", 100); err != nil || n != 0 {
		f.t.Fatalf("PruneCheckpoints(ghost) = %d, %v; want 0", n, err)
	}
	if n, err := cps.PruneCheckpoints(f.ctx, "s2", 100); err != nil || n != 4 {
		f.t.Fatalf("PruneCheckpoints(s2, 100) = %d, %v; want 4", n, err)
	}
	f.wantNoCheckpoint(cps, "s2", 0)
	f.wantLatest(cps, "s1", 0, 6, ds[6])
}
