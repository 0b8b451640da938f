package vfs

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/store"
)

func TestEditReusesUnchangedRefs(t *testing.T) {
	ctx := context.Background()
	blobs := blob.NewMemory()
	edges := store.NewMemory(blobs)
	m := mustBuild(t, blobs, sampleFiles())
	before := append([]Entry(nil), m.Files...)
	ref1, err := WriteManifest(ctx, blobs, edges, m)
	if err != nil {
		t.Fatal(err)
	}

	m2, e, err := Edit(ctx, blobs, m, "docs/guide.md", []byte("Guide, edited\n"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Files, before) {
		t.Fatal("Edit modified its input manifest")
	}
	if e.Ref.MediaType != MediaMarkdown || e.Size != 14 {
		t.Fatalf("entry %+v", e)
	}
	if len(m2.Files) != len(m.Files) {
		t.Fatalf("file count %d -> %d", len(m.Files), len(m2.Files))
	}
	for i, old := range m.Files {
		got := m2.Files[i]
		if old.Path == "docs/guide.md" {
			if got.Ref.Digest == old.Ref.Digest {
				t.Fatal("edited file kept its digest")
			}
			continue
		}
		if got != old {
			t.Fatalf("unchanged file %s changed: %+v -> %+v", old.Path, old, got)
		}
	}
	if m2.Totals.Bytes != m.Totals.Bytes+8 {
		t.Fatalf("totals %+v -> %+v", m.Totals, m2.Totals)
	}
	ref2, err := WriteManifest(ctx, blobs, edges, m2)
	if err != nil {
		t.Fatal(err)
	}
	if ref1.Digest == ref2.Digest {
		t.Fatal("edited manifest has the same digest")
	}

	// Adding and removing files.
	m3, err := WithFile(m2, Entry{Path: "new/file.txt", Ref: content.Ref([]byte("x"), MediaText, ""), Size: 1}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Lookup(m3, "new/file.txt"); !ok || len(m3.Files) != len(m2.Files)+1 {
		t.Fatal("WithFile did not add")
	}
	m4, err := WithoutFile(m3, "new/file.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m4, m2) {
		t.Fatal("add then remove is not the identity")
	}
	var nf *NotFoundError
	if _, err := WithoutFile(m4, "new/file.txt"); !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("removing a missing file: %v", err)
	}
	// A file cannot become a directory, or the other way round.
	var pe *PathError
	if _, err := WithFile(m2, Entry{Path: "docs/guide.md/x", Ref: e.Ref, Size: 1}, Limits{}); !errors.As(err, &pe) {
		t.Fatalf("file under a file: %v", err)
	}
	if _, err := WithFile(m2, Entry{Path: "docs", Ref: e.Ref, Size: 1}, Limits{}); !errors.As(err, &pe) {
		t.Fatalf("file over a directory: %v", err)
	}
	var le *LimitError
	if _, _, err := Edit(ctx, blobs, m2, "README.md", make([]byte, 11), Limits{MaxFileBytes: 10}); !errors.As(err, &le) || le.Path != "README.md" {
		t.Fatalf("oversize edit: %v", err)
	}
}

func TestEditOneFileWritesOneFileBlobAndOneManifest(t *testing.T) {
	ctx := context.Background()
	blobs := &countingStore{Store: blob.NewMemory()}
	edges := store.NewMemory(blobs.Store)
	files := map[string][]byte{}
	for i := range 200 {
		files[fmt.Sprintf("dir%02d/file%03d.txt", i%10, i)] = fmt.Appendf(nil, "content of file %d\n", i)
	}
	m := mustBuild(t, blobs, files)
	if _, err := WriteManifest(ctx, blobs, edges, m); err != nil {
		t.Fatal(err)
	}
	if n, _ := blobs.reset(); n != 201 {
		t.Fatalf("import wrote %d blobs, want 201", n)
	}

	newData := []byte("edited\n")
	m2, _, err := Edit(ctx, blobs, m, "dir07/file117.txt", newData, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := WriteManifest(ctx, blobs, edges, m2)
	if err != nil {
		t.Fatal(err)
	}
	manifestBytes, _ := MarshalManifest(m2)
	n, size := blobs.reset()
	if n != 2 || size != int64(len(newData)+len(manifestBytes)) {
		t.Fatalf("edit wrote %d blobs, %d bytes; want 2 blobs, %d bytes", n, size, len(newData)+len(manifestBytes))
	}
	kids, _ := edges.Children(ctx, ref.Digest)
	if len(kids) != 200 {
		t.Fatalf("new manifest has %d edges", len(kids))
	}
}
