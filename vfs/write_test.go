package vfs

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

// The retention rule: the edges recorded for a manifest are exactly the refs
// its bytes contain.
func TestWriteManifestRecordsExactlyItsRefs(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	edges := store.NewMemory(blobs)
	m := mustBuild(t, blobs, sampleFiles())
	ref, err := WriteManifest(ctx, blobs, edges, m)
	if err != nil {
		t.Fatal(err)
	}
	if ref.MediaType != MediaType {
		t.Fatalf("media type %q", ref.MediaType)
	}
	data, err := blobs.Get(ctx, ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	want, err := content.ExtractRefs(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := edges.Children(ctx, ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	// sampleFiles has two files with the same bytes: 10 files, 9 blobs.
	if len(want) != 9 || !reflect.DeepEqual(got, want) {
		t.Fatalf("edges %v\nwant   %v", got, want)
	}
	if !reflect.DeepEqual(FileDigests(m), want) {
		t.Fatal("FileDigests differs from the manifest's refs")
	}

	back, err := ReadManifest(ctx, blobs, ref.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatal("ReadManifest differs from what was written")
	}
}

func TestWriteManifestRefusesMissingFileBlobs(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	edges := store.NewMemory(blobs)
	m, err := NewManifest([]Entry{{Path: "ghost.txt", Ref: content.Ref([]byte("never stored"), MediaText, ""), Size: 12}}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var me *blob.MissingError
	if _, err := WriteManifest(ctx, blobs, edges, m); !errors.As(err, &me) {
		t.Fatalf("got %v, want MissingError", err)
	}
	// An invalid manifest is never stored.
	bad := Manifest{Files: m.Files, Totals: Totals{Files: 2}}
	if _, err := WriteManifest(ctx, blobs, edges, bad); !errors.Is(err, ErrInvalidManifest) {
		t.Fatalf("got %v", err)
	}
}

func TestReadManifestErrors(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	if _, err := ReadManifest(ctx, blobs, content.Sum([]byte("absent"))); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("absent: %v", err)
	}
	d, _ := blobs.Put(ctx, []byte(`{"format":"other","version":1,"files":[],"totals":{"files":0,"bytes":0}}`))
	var fe *FormatError
	if _, err := ReadManifest(ctx, blobs, d); !errors.As(err, &fe) {
		t.Fatalf("wrong format: %v", err)
	}
}
