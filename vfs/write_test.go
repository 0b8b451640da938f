package vfs

import (
	"context"
	"errors"
	"reflect"
	"strings"
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

// A name over 255 bytes is refused when a tree is written (commit, write,
// edit, import), so no stored tree holds a file no file system can export;
// a stored manifest that already has one still reads.
func TestLongSegmentsAreRefusedWhenWritten(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	long := strings.Repeat("n", MaxSegmentBytes+1)
	ok := strings.Repeat("n", MaxSegmentBytes)
	ref, err := blob.PutRef(ctx, blobs, []byte("x"), MediaText, "")
	if err != nil {
		t.Fatal(err)
	}
	isSegmentLimit := func(err error, p string) bool {
		var le *LimitError
		return errors.As(err, &le) && le.Limit == "segment bytes" && le.Got == MaxSegmentBytes+1 && le.Path == p
	}
	for _, p := range []string{long, "dir/" + long, long + "/file.txt"} {
		if _, err := NewManifest([]Entry{{Path: p, Ref: ref, Size: 1}}, Limits{}); !isSegmentLimit(err, p) {
			t.Errorf("NewManifest(%q...): %v", p[:10], err)
		}
		if _, _, err := Edit(ctx, blobs, Manifest{Files: []Entry{}}, p, []byte("x"), Limits{}); !isSegmentLimit(err, p) {
			t.Errorf("Edit(%q...): %v", p[:10], err)
		}
		if _, err := Build(ctx, blobs, map[string][]byte{p: []byte("x")}, Limits{}); !isSegmentLimit(err, p) {
			t.Errorf("Build(%q...): %v", p[:10], err)
		}
	}
	if _, err := NewManifest([]Entry{{Path: "dir/" + ok, Ref: ref, Size: 1}}, Limits{}); err != nil {
		t.Fatalf("a 255-byte name: %v", err)
	}
	// Reading is tolerant: the rule is not part of a stored manifest's validity.
	stored := Manifest{Files: []Entry{{Path: long, Ref: ref, Size: 1}}, Totals: Totals{Files: 1, Bytes: 1}}
	data, err := MarshalManifest(stored)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseManifest(data); err != nil {
		t.Fatalf("a stored manifest with a long name no longer reads: %v", err)
	}
	// The model is told, as a mistake it can correct.
	f := newTestFS(t)
	wantError(t, call(t, f.FS, "vfs_write_file", obj{"path": "/work/" + long, "content": "x"}), "segment bytes 256 > max 255")
	// Editing a file stored before the rule writes it again: refused too.
	if _, err := f.Blobs.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	head, err := WriteManifest(ctx, f.Blobs, f.Edges, stored)
	if err != nil {
		t.Fatal(err)
	}
	f.heads.heads["w"] = head.Digest
	wantOK(t, call(t, f.FS, "vfs_read_file", obj{"path": "/work/" + long}), "x")
	wantError(t, call(t, f.FS, "vfs_edit_file", obj{"path": "/work/" + long, "old": "x", "new": "y"}), "segment bytes 256 > max 255")
}
