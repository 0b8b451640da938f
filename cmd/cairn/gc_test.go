package main

import (
	"bytes"
	"context"
	"strings"
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

// `cairn gc --dry-run` prints words, not JSON, and counts every stored blob
// (as storage report does), saying how many the grace kept unexamined.
func TestGCDryRunPrintsAReadableSummary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"one", "two", "three"} {
		if _, err := st.Put(ctx, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	gc := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		root := rootCommand()
		root.SetArgs(append([]string{"gc", "--data", dir}, args...))
		root.SetOut(&out)
		if err := root.ExecuteContext(ctx); err != nil {
			t.Fatalf("cairn gc %v: %v", args, err)
		}
		return out.String()
	}
	out := gc("--dry-run")
	for _, want := range []string{"dry run: nothing was deleted\n", "3 blobs stored in 1 universe(s); examined 0, kept 3 put or used within the grace (168h0m0s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("gc --dry-run lacks %q:\n%s", want, out)
		}
	}
	out = gc("--dry-run", "--grace", "0")
	if !strings.Contains(out, "examined 3, kept 0") || !strings.Contains(out, "3 are held by nothing and would be deleted (11 bytes)") {
		t.Errorf("gc --dry-run --grace 0:\n%s", out)
	}
	out = gc("--grace", "0")
	if !strings.Contains(out, "deleted 3 blobs (11 bytes)") {
		t.Errorf("gc --grace 0:\n%s", out)
	}
}
