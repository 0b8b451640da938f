package sqlite_test

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/sqlite"
	"github.com/cairn-agents/cairn/store/storetest"
)

func open(t *testing.T, dir string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestSessionLogConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := open(t, t.TempDir())
		return s, s
	})
}

func TestBlobConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return open(t, t.TempDir()) })
}

func TestStorageReportConformance(t *testing.T) {
	storetest.RunStorageReport(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := open(t, t.TempDir())
		return s, s
	})
}

func TestRetentionConformance(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := open(t, t.TempDir())
		return s, s
	})
}

func TestRetentionRace(t *testing.T) {
	storetest.RunRetentionRace(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := open(t, t.TempDir())
		return s, s
	})
}
