package testenv

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/vfs"
)

// Workspace creates workspace name holding files (path → text) in a store.
func Workspace(t testing.TB, blobs blob.Store, files runtime.Files, name string, texts map[string]string) {
	t.Helper()
	ctx := context.Background()
	data := map[string][]byte{}
	for p, s := range texts {
		data[p] = []byte(s)
	}
	m, err := vfs.Build(ctx, blobs, data, vfs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := vfs.WriteManifest(ctx, blobs, files, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := files.CreateWorkspace(ctx, name, ref.Digest); err != nil {
		t.Fatal(err)
	}
}
