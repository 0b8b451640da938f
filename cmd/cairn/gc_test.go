package main

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/retention"
	"github.com/cairn-agents/cairn/store/sqlite"
)

func TestGCEmbedded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Put(ctx, []byte("garbage"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	o := serveOptions{dataDir: dir}
	if s, err := runGC(ctx, o, retention.Options{Grace: retention.DefaultGrace}); err != nil || s.RowsDeleted != 0 {
		t.Fatalf("gc within grace = %+v, %v", s, err)
	}
	if s, err := runGC(ctx, o, retention.Options{DryRun: true}); err != nil || s.Candidates != 1 || s.RowsDeleted != 0 {
		t.Fatalf("dry run = %+v, %v", s, err)
	}
	if s, err := runGC(ctx, o, retention.Options{}); err != nil || s.RowsDeleted != 1 {
		t.Fatalf("gc = %+v, %v", s, err)
	}
	st, err = sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if missing, err := st.Missing(ctx, nil); err != nil || missing != nil {
		t.Fatal(missing, err)
	}
	if _, err := st.Get(ctx, d); err == nil {
		t.Fatal("collected blob still readable")
	}
}
