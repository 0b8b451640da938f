package postgres_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/postgres"
	"github.com/cairn-agents/cairn/store/storetest"
)

// connect returns a pool to a fresh, migrated database and its URL.
func connect(t testing.TB, opts ...postgres.Option) (*postgres.DB, string) {
	t.Helper()
	url := testenv.PostgresURL(t)
	db, err := postgres.Connect(context.Background(), url, opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db, url
}

// sql opens a separate connection for looking at (and tampering with) the
// tables the way an operator or a collector would.
func sql(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect for SQL: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func openStore(t testing.TB, db *postgres.DB, universe string, objects objstore.Store) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	if err := db.EnsureUniverse(ctx, universe); err != nil {
		t.Fatalf("EnsureUniverse(%s): %v", universe, err)
	}
	s, err := db.Store(ctx, universe, objects)
	if err != nil {
		t.Fatalf("Store(%s): %v", universe, err)
	}
	return s
}

func dirObjects(t testing.TB) *objstore.Dir {
	t.Helper()
	dir, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// newStore is the store the conformance suites run on, with objects as its
// object storage (the S3 run passes its own). It lives in a fresh database
// beside a "noise" universe that holds sessions with the ids the suites use
// and the very bytes they expect to be absent, so a query that forgets its
// universe fails a conformance test.
func newStore(t *testing.T, objects objstore.Store) *postgres.Store {
	t.Helper()
	db, _ := connect(t)
	seedNoise(t, openStore(t, db, "noise", objects))
	return openStore(t, db, "conformance", objects)
}

func seedNoise(t *testing.T, s *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	put := func(data []byte) content.Digest {
		d, err := s.Put(ctx, data)
		if err != nil {
			t.Fatalf("seed blob: %v", err)
		}
		return d
	}
	for _, str := range []string{"absent", "absent B", "absent C", "never stored", "absent parent",
		"absent child A", "absent child B", "file b"} {
		put([]byte(str))
	}
	for i := range 5 {
		put(fmt.Appendf(nil, "absent %d", i))
	}
	put(blobtest.Bytes(1, 200<<10))
	if err := s.PutEdges(ctx, put([]byte("manifest")), []content.Digest{content.Sum([]byte("file b"))}); err != nil {
		t.Fatalf("seed edges: %v", err)
	}
	// Workspaces and snapshots the workspace tests expect absent, pointing at
	// bytes they expect absent.
	for _, name := range []string{"main", "b", "Z-1", "ghost", "other", "second", "A"} {
		if _, err := s.CreateWorkspace(ctx, name, content.Sum([]byte("absent"))); err != nil {
			t.Fatalf("seed workspace %s: %v", name, err)
		}
	}
	if _, err := s.MoveHead(ctx, "main", 1, put([]byte("manifest"))); err != nil {
		t.Fatalf("seed workspace move: %v", err)
	}
	for _, str := range []string{"absent", "manifest", "other manifest"} {
		if _, err := s.PutSnapshot(ctx, put([]byte(str))); err != nil {
			t.Fatalf("seed snapshot: %v", err)
		}
	}
	for _, id := range []string{"s1", "s2", "s-a", "ghost", "unknown", "known", "s0", "src", "child", "root", "a", "b", "e", "clone", "keep"} {
		if _, err := s.Append(ctx, id, 0, []core.Proposal{
			{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion,
				Payload: []byte(`{"sessionId":"` + id + `"}`)},
			{ObservedAtMs: 2, Kind: core.KindRunAccepted, Version: core.EventVersion, Joins: []string{"run:noise"},
				Payload: []byte(`{"runId":"noise","inputFingerprint":"fp"}`)},
			core.NewProposal(3, nil, "test.refs", []content.Digest{content.Sum([]byte("absent B"))}),
		}); err != nil {
			t.Fatalf("seed session %s: %v", id, err)
		}
	}
	// Forks under ids the fork tests use, of sources they use.
	for _, f := range []struct{ id, source string }{{"f2", "root"}, {"fork", "src"}, {"new", "src"}, {"d", "a"}} {
		if _, err := s.Fork(ctx, store.ForkRequest{SessionID: f.id, Source: f.source, AtSeq: 2, AtMs: 1 << 40}); err != nil {
			t.Fatalf("seed fork %s: %v", f.id, err)
		}
	}
}

func TestSessionLogConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := newStore(t, dirObjects(t))
		return s, s
	})
}

func TestStorageReportConformance(t *testing.T) {
	storetest.RunStorageReport(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := newStore(t, dirObjects(t))
		return s, s
	})
}

func TestRetentionConformance(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := newStore(t, dirObjects(t))
		return s, s
	})
}

func TestBlobConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return newStore(t, dirObjects(t)) })
}

// objectFiles lists the files under dir's root as keys, temporary files included.
func objectFiles(t testing.TB, dir *objstore.Dir) []string {
	t.Helper()
	var keys []string
	err := filepath.WalkDir(dir.Root(), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir.Root(), p)
		keys = append(keys, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
