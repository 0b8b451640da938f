package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store"
)

// RunRetentionRace runs a collector at grace 0 continuously while writers
// put blobs and append events that reference them, some right away and
// some only once the collector has deleted the unrooted blob.
// At the end no event references a missing blob, every rejected append was
// a *blob.MissingError naming the collected blob, and the late appends were
// all rejected.
func RunRetentionRace(t *testing.T, newStores func(t *testing.T) (store.SessionLog, blob.Store)) {
	const writers, perWriter = 4, 40
	log, blobs := newStores(t)
	f := &fixture{t: t, ctx: context.Background(), log: log, blobs: blobs}
	col := &retention.Collector{Universes: retention.Single("u", f.collectable())}

	var passes, conflicts atomic.Int64
	stop := make(chan struct{})
	collected := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				collected <- nil
				return
			default:
			}
			st, err := col.Collect(f.ctx, retention.Options{Grace: 0})
			if err != nil {
				collected <- err
				return
			}
			passes.Add(1)
			conflicts.Add(st.HolderConflicts)
		}
	}()
	// collectedBlob waits until the collector has deleted d, which it must
	// do eventually: nothing roots d and its grace is 0. (A pass can end
	// early on a holder conflict with another writer's append, so a number
	// of passes proves nothing.)
	collectedBlob := func(d content.Digest) error {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			select {
			case err := <-collected:
				collected <- err
				return fmt.Errorf("the collector stopped early: %v", err)
			case <-time.After(2 * time.Millisecond):
			}
			missing, err := blobs.Missing(f.ctx, []content.Digest{d})
			if err != nil {
				return err
			}
			if len(missing) == 1 {
				return nil
			}
		}
		return fmt.Errorf("unrooted blob %s outlived a minute of passes at grace 0", d)
	}

	var accepted, rejected, lateRejected atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("race%d", w)
			if _, err := log.Append(f.ctx, id, 0, []core.Proposal{opened(id, 1)}); err != nil {
				errs <- err
				return
			}
			head := int64(1)
			for i := range perWriter {
				data := raceBytes(w, i)
				d, err := blobs.Put(f.ctx, data)
				if err != nil {
					errs <- fmt.Errorf("put: %w", err)
					return
				}
				late := i%5 == 4
				if late {
					if err := collectedBlob(d); err != nil {
						errs <- err
						return
					}
				}
				_, err = log.Append(f.ctx, id, head, []core.Proposal{refs(int64(i+2), textRef(d))})
				var me *blob.MissingError
				switch {
				case err == nil:
					head++
					accepted.Add(1)
					if late {
						errs <- fmt.Errorf("%s: an append referencing a collected blob was accepted", id)
						return
					}
				case errors.As(err, &me) && slices.Equal(me.Digests, []content.Digest{d}):
					rejected.Add(1)
					if late {
						lateRejected.Add(1)
					}
				default:
					errs <- fmt.Errorf("%s append %d: %v (%T), want nil or a *blob.MissingError naming %s", id, i, err, err, d)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-collected; err != nil {
		t.Fatalf("Collect: %v", err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	ids := make([]string, writers)
	for w := range writers {
		ids[w] = fmt.Sprintf("race%d", w)
	}
	// Rooted blobs survive any number of further passes.
	f.gc()
	n := f.wantAllReadable(ids...)
	if want := int64(writers * perWriter / 5); lateRejected.Load() != want {
		t.Fatalf("%d late appends rejected, want all %d", lateRejected.Load(), want)
	}
	if int64(n) != accepted.Load() {
		t.Fatalf("%d refs in the sessions, %d accepted appends", n, accepted.Load())
	}
	t.Logf("%d passes (%d ended by a holder conflict); %d appends accepted, %d rejected with a missing blob (%d late)",
		passes.Load(), conflicts.Load(), accepted.Load(), rejected.Load(), lateRejected.Load())
}
