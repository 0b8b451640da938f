package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/sqlite"
)

func prop(kind string, at int64, payload any, joins ...string) core.Proposal {
	return core.NewProposal(at, joins, kind, payload)
}

func opened(id string) core.Proposal {
	return prop(core.KindSessionOpened, 10, core.SessionOpened{SessionID: id, Config: core.SessionConfig{
		Model: core.ModelSelection{ProviderID: "p", APIKind: core.APIChatCompletions, Model: "m"},
	}})
}

func TestReopenReadsEverythingBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	small, large := []byte("small blob"), blobtest.Bytes(9, 200<<10)
	ds, _ := s.Put(ctx, small)
	dl, _ := s.Put(ctx, large)
	var written = map[string][]core.Event{}
	for i, id := range []string{"alpha", "beta", "gamma"} {
		evs, err := s.Append(ctx, id, 0, []core.Proposal{
			opened(id),
			prop(core.KindRunAccepted, 20, core.RunAccepted{RunID: "r1", InputFingerprint: "fp"}, "run:r1"),
			prop("test.refs", 30, map[string]content.Digest{"small": ds, "large": dl}),
		})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 { // beta finishes its run
			more, err := s.Append(ctx, id, 3, []core.Proposal{prop(core.KindRunCompleted, 40, core.RunCompleted{RunID: "r1"}, "run:r1")})
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, more...)
		}
		written[id] = evs
	}
	wantSessions, err := s.Sessions(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, dir)
	for id, want := range written {
		got, err := s.ReadAfter(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d events after reopen, want %d", id, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Seq != w.Seq || g.ObservedAtMs != w.ObservedAtMs || g.Kind != w.Kind || g.Version != w.Version ||
				!bytes.Equal(g.Payload, w.Payload) || !slices.Equal(g.Joins, w.Joins) {
				t.Fatalf("%s event %d after reopen = %+v, want %+v", id, i, g, w)
			}
		}
		roots, err := s.Roots(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wantRoots := []content.Digest{ds, dl}
		content.SortDigests(wantRoots)
		if !slices.Equal(roots, wantRoots) {
			t.Fatalf("%s roots after reopen = %v, want %v", id, roots, wantRoots)
		}
	}
	gotSessions, err := s.Sessions(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotSessions, wantSessions) {
		t.Fatalf("sessions after reopen = %+v, want %+v", gotSessions, wantSessions)
	}
	unfinished, err := s.Unfinished(ctx)
	if err != nil || !slices.Equal(unfinished, []string{"alpha", "gamma"}) {
		t.Fatalf("Unfinished after reopen = %v, %v; want [alpha gamma]", unfinished, err)
	}
	for _, data := range [][]byte{small, large} {
		got, err := s.Get(ctx, content.Sum(data))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get after reopen: %d bytes, %v", len(got), err)
		}
	}
	if u, err := s.Usage(ctx); err != nil || u != (blob.Usage{Blobs: 2, Bytes: int64(len(small) + len(large))}) {
		t.Fatalf("Usage after reopen = %+v, %v", u, err)
	}
	// The log continues where it left off.
	if _, err := s.Append(ctx, "alpha", 3, []core.Proposal{prop("test.note", 50, "more")}); err != nil {
		t.Fatalf("Append after reopen: %v", err)
	}

	// Reopening applied no migration twice.
	db, err := sql.Open("sqlite", filepath.Join(dir, "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, version int
	if err := db.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != sqlite.SchemaVersion() || version != sqlite.SchemaVersion() {
		t.Fatalf("schema_migrations has %d rows up to %d, want %d", rows, version, sqlite.SchemaVersion())
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at_ms) VALUES (?, 0)`, sqlite.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := sqlite.Open(ctx, dir); !errors.Is(err, sqlite.ErrSchemaTooNew) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a newer database: %v, want ErrSchemaTooNew", err)
	}
}

func TestOpenRejectsBadUniverse(t *testing.T) {
	for _, u := range []string{"", "a/b", "..", ".hidden", "white space"} {
		s, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.WithUniverse(u))
		if !errors.Is(err, sqlite.ErrInvalidUniverse) {
			if s != nil {
				s.Close()
			}
			t.Errorf("WithUniverse(%q): %v, want ErrInvalidUniverse", u, err)
		}
	}
}

// Two universes in one database see nothing of each other, even by digest.
func TestUniversesAreIsolated(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, dir, sqlite.WithUniverse("tenant-a"))
	b := open(t, dir, sqlite.WithUniverse("tenant-b"))

	small, _ := a.Put(ctx, []byte("a's secret"))
	large, _ := a.Put(ctx, blobtest.Bytes(11, 90<<10))
	if _, err := a.Append(ctx, "s1", 0, []core.Proposal{opened("s1"), prop("test.refs", 1, []content.Digest{small})}); err != nil {
		t.Fatal(err)
	}

	for _, d := range []content.Digest{small, large} {
		if _, err := b.Get(ctx, d); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("b.Get of a's blob: %v, want ErrNotFound", err)
		}
	}
	if missing, err := b.Missing(ctx, []content.Digest{small, large}); err != nil || len(missing) != 2 {
		t.Fatalf("b.Missing of a's blobs = %v, %v; want both", missing, err)
	}
	if u, err := b.Usage(ctx); err != nil || u != (blob.Usage{}) {
		t.Fatalf("b.Usage = %+v, %v; want zero", u, err)
	}
	if _, err := b.Session(ctx, "s1"); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("b.Session(s1): %v, want ErrSessionNotFound", err)
	}
	if ls, err := b.Sessions(ctx, "", 0); err != nil || len(ls) != 0 {
		t.Fatalf("b.Sessions = %v, %v; want none", ls, err)
	}
	// b may use the same session id, and may not cite a's blob.
	_, err := b.Append(ctx, "s1", 0, []core.Proposal{opened("s1"), prop("test.refs", 1, []content.Digest{small})})
	var me *blob.MissingError
	if !errors.As(err, &me) || !slices.Equal(me.Digests, []content.Digest{small}) {
		t.Fatalf("b.Append citing a's blob: %v, want MissingError for it", err)
	}
	if _, err := b.Append(ctx, "s1", 0, []core.Proposal{opened("s1"), prop("test.note", 1, "b's own")}); err != nil {
		t.Fatal(err)
	}
	// b storing the same bytes gets its own row and its own object.
	if _, err := b.Put(ctx, blobtest.Bytes(11, 90<<10)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*sqlite.Store{a, b} {
		evs, err := s.ReadAfter(ctx, "s1", 0, 0)
		if err != nil || len(evs) != 2 {
			t.Fatalf("%s ReadAfter(s1) = %d events, %v", s.Universe(), len(evs), err)
		}
		if u, err := s.Usage(ctx); err != nil || u.Blobs < 1 {
			t.Fatalf("%s Usage = %+v, %v", s.Universe(), u, err)
		}
	}
	if evs, _ := b.ReadAfter(ctx, "s1", 1, 0); string(evs[0].Payload) != `"b's own"` {
		t.Fatalf("b's s1 seq 2 = %s", evs[0].Payload)
	}
	if evs, _ := a.ReadAfter(ctx, "s1", 1, 0); string(evs[0].Payload) != fmt.Sprintf("[%q]", small.String()) {
		t.Fatalf("a's s1 seq 2 = %s", evs[0].Payload)
	}
}
