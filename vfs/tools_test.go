package vfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// call runs a tool with args marshalled from v and fails on a runtime error.
func call(t *testing.T, fs *FS, name string, v any) ToolResult {
	t.Helper()
	args, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	r, err := CallTool(context.Background(), fs, name, args)
	if err != nil {
		t.Fatalf("%s %s: runtime error %v", name, args, err)
	}
	return r
}

func wantOK(t *testing.T, r ToolResult, want string) {
	t.Helper()
	if r.IsError || r.Text != want {
		t.Fatalf("got %+v\nwant %q", r, want)
	}
}

func wantError(t *testing.T, r ToolResult, contains ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("got success %q, want an error", r.Text)
	}
	for _, c := range contains {
		if !strings.Contains(r.Text, c) {
			t.Fatalf("error %q does not contain %q", r.Text, c)
		}
	}
}

type obj = map[string]any

func TestToolDefs(t *testing.T) {
	defs := ToolDefs()
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
		var schema struct {
			Type                 string                    `json:"type"`
			Properties           map[string]map[string]any `json:"properties"`
			Required             []string                  `json:"required"`
			AdditionalProperties *bool                     `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatalf("%s schema: %v", d.Name, err)
		}
		if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties || len(schema.Required) == 0 {
			t.Errorf("%s schema %s", d.Name, d.Parameters)
		}
		for _, r := range schema.Required {
			if schema.Properties[r] == nil {
				t.Errorf("%s requires undeclared %q", d.Name, r)
			}
		}
		if d.Description == "" {
			t.Errorf("%s has no description", d.Name)
		}
	}
	want := []string{"vfs_read_file", "vfs_write_file", "vfs_edit_file", "vfs_list_dir", "vfs_glob", "vfs_grep"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("names %v", names)
	}
	// Callers cannot change the definitions through the returned slice.
	defs[0].Parameters[0] = 'X'
	if ToolDefs()[0].Parameters[0] != '{' {
		t.Fatal("ToolDefs shares its schema bytes")
	}
}

func TestToolArgs(t *testing.T) {
	f := newTestFS(t)
	wantError(t, call(t, f.FS, "vfs_read_file", obj{"path": "/work/README.md", "lines": 3}), `unknown field "lines"`)
	wantError(t, call(t, f.FS, "vfs_read_file", obj{}), `missing required field "path"`)
	wantError(t, call(t, f.FS, "vfs_write_file", obj{"path": "/work/x"}), `missing required field "content"`)
	wantError(t, call(t, f.FS, "vfs_edit_file", obj{"path": "/work/x", "old": "a"}), `missing required field "new"`)
	wantError(t, call(t, f.FS, "vfs_glob", obj{"path": "/"}), `missing required field "pattern"`)
	wantError(t, call(t, f.FS, "vfs_read_file", obj{"path": 3}), "invalid arguments")
	wantError(t, call(t, f.FS, "vfs_nope", obj{}), "unknown tool")
	r, err := CallTool(context.Background(), f.FS, "vfs_list_dir", json.RawMessage(`{"path":"/"} {}`))
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, r, "trailing data")
	// An empty content is a valid write.
	wantOK(t, call(t, f.FS, "vfs_write_file", obj{"path": "/work/empty.txt", "content": ""}),
		`Wrote /work/empty.txt (0 bytes); workspace "w" is now at revision 2.`)
	wantError(t, call(t, f.FS, "vfs_read_file", obj{"path": "README.md"}), "relative path")
	wantError(t, call(t, f.FS, "vfs_read_file", obj{"path": "/work/../etc/passwd"}), `".."`)
}

func TestToolReadFile(t *testing.T) {
	f := newTestFS(t)
	ctx := context.Background()
	if _, err := f.WriteFile(ctx, "/work/lines.txt", []byte("one\ntwo\nthree\nfour")); err != nil {
		t.Fatal(err)
	}
	read := func(args obj) ToolResult { return call(t, f.FS, "vfs_read_file", args) }
	p := "/work/lines.txt"
	wantOK(t, read(obj{"path": p}), "one\ntwo\nthree\nfour")
	wantOK(t, read(obj{"path": p, "startLine": 2, "endLine": 3}), "two\nthree\n")
	wantOK(t, read(obj{"path": p, "startLine": 3}), "three\nfour")
	wantOK(t, read(obj{"path": p, "endLine": 1}), "one\n")
	wantOK(t, read(obj{"path": p, "startLine": 4, "endLine": 99}), "four")
	wantError(t, read(obj{"path": p, "startLine": 5}), "past the end", "4 lines")
	wantError(t, read(obj{"path": p, "startLine": 0}), "startLine 0")
	wantError(t, read(obj{"path": p, "startLine": 3, "endLine": 2}), "before startLine")
	wantOK(t, read(obj{"path": "/refs/v1/spec.md", "startLine": 2}), "The notes are final.\n")

	wantError(t, read(obj{"path": "/work/src/logo.bin"}), "not UTF-8", "5 bytes")
	wantError(t, read(obj{"path": "/work/missing.md"}), "/work/missing.md", "not found")
	wantError(t, read(obj{"path": "/work/docs"}), "is a directory")

	// Output is bounded; the error suggests a range that fits.
	line := strings.Repeat("x", 1023) + "\n"
	big := strings.Repeat(line, 300) // 300 KiB
	if _, err := f.WriteFile(ctx, "/work/big.txt", []byte(big)); err != nil {
		t.Fatal(err)
	}
	wantError(t, read(obj{"path": "/work/big.txt"}), "read limit", "startLine 1, endLine 256")
	r := read(obj{"path": "/work/big.txt", "startLine": 1, "endLine": 256})
	if r.IsError || len(r.Text) != 256*1024 {
		t.Fatalf("ranged read: error %v, %d bytes", r.IsError, len(r.Text))
	}
}

func TestToolWriteAndEdit(t *testing.T) {
	f := newTestFS(t)
	wantOK(t, call(t, f.FS, "vfs_write_file", obj{"path": "/work/n.txt", "content": "a b b\n"}),
		`Wrote /work/n.txt (6 bytes); workspace "w" is now at revision 2.`)
	edit := func(old, new string) ToolResult {
		return call(t, f.FS, "vfs_edit_file", obj{"path": "/work/n.txt", "old": old, "new": new})
	}
	wantError(t, edit("c", "C"), "not found")
	wantError(t, edit("b", "B"), "occurs 2 times")
	wantError(t, edit("", "B"), "empty")
	wantOK(t, edit("a b", "A b"), `Edited /work/n.txt (6 bytes); workspace "w" is now at revision 3.`)
	wantOK(t, call(t, f.FS, "vfs_read_file", obj{"path": "/work/n.txt"}), "A b b\n")
	wantError(t, call(t, f.FS, "vfs_write_file", obj{"path": "/refs/v1/spec.md", "content": "x"}), "read-only", "/refs/v1")

	// A conflict is the model's to resolve.
	f.heads.beforeMove = func(call int) {
		if call == 3 {
			if _, err := f.WriteFile(context.Background(), "/work/n.txt", []byte("theirs")); err != nil {
				t.Error(err)
			}
		}
	}
	wantError(t, call(t, f.FS, "vfs_write_file", obj{"path": "/work/n.txt", "content": "mine"}), "changed by another writer")
}

func TestToolListGlobGrep(t *testing.T) {
	f := newTestFS(t)
	wantOK(t, call(t, f.FS, "vfs_list_dir", obj{"path": "/"}), "refs/\nwork/")
	wantOK(t, call(t, f.FS, "vfs_list_dir", obj{"path": "/work/docs"}), "api/\nguide.md (6 bytes)\nnotes.txt (6 bytes)")
	wantError(t, call(t, f.FS, "vfs_list_dir", obj{"path": "/work/README.md"}), "is a file")
	wantError(t, call(t, f.FS, "vfs_list_dir", obj{"path": "/tmp"}), "not inside any mount", "/work")

	glob := func(args obj) ToolResult { return call(t, f.FS, "vfs_glob", args) }
	wantOK(t, glob(obj{"pattern": "**/*.md"}),
		"/refs/v1/spec.md\n/work/.cairn/prompts/inst.md\n/work/README.md\n/work/a/b/c/deep.md\n/work/docs/guide.md")
	wantOK(t, glob(obj{"pattern": "**/*.md", "path": "/work/docs"}), "/work/docs/guide.md")
	wantOK(t, glob(obj{"pattern": "/refs/*/*.md"}), "/refs/v1/spec.md")
	wantOK(t, glob(obj{"pattern": "*.go", "path": "/work"}), "No files match /work/*.go.")
	wantError(t, glob(obj{"pattern": "/x/*", "path": "/work"}), "absolute")
	wantError(t, glob(obj{"pattern": "[z"}), "syntax error")
	wantError(t, glob(obj{"pattern": "../*", "path": "/work"}), `".."`)

	grep := func(args obj) ToolResult { return call(t, f.FS, "vfs_grep", args) }
	// Across both mounts, sorted by path; binary files are skipped.
	wantOK(t, grep(obj{"pattern": "(?i)notes"}),
		"/refs/v1/spec.md:2: The notes are final.\n/work/docs/notes.txt:1: notes\n/work/same-as-notes/notes.txt:1: notes")
	wantOK(t, grep(obj{"pattern": "notes", "glob": "*.md"}), "/refs/v1/spec.md:2: The notes are final.")
	wantOK(t, grep(obj{"pattern": "notes", "path": "/work", "glob": "docs/*"}), "/work/docs/notes.txt:1: notes")
	wantOK(t, grep(obj{"pattern": "spot", "path": "/refs/v1/data/x.txt"}), "/refs/v1/data/x.txt:2: the spot")
	wantOK(t, grep(obj{"pattern": "zzz"}), "No matches.")
	wantError(t, grep(obj{"pattern": "("}), "invalid pattern")
	wantError(t, grep(obj{"pattern": "x", "glob": "[z"}), "invalid glob")
	wantError(t, grep(obj{"pattern": "x", "path": "/work/nope"}), "not found")

	// Matches are bounded, with a note.
	var lines strings.Builder
	for i := range MaxGrepMatches + 10 {
		fmt.Fprintf(&lines, "hit %d\n", i)
	}
	if _, err := f.WriteFile(context.Background(), "/work/many.txt", []byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	r := grep(obj{"pattern": "^hit", "path": "/work/many.txt"})
	out := strings.Split(r.Text, "\n")
	if r.IsError || len(out) != MaxGrepMatches+1 || !strings.Contains(out[MaxGrepMatches], "stopped after 200 matches") ||
		out[0] != "/work/many.txt:1: hit 0" {
		t.Fatalf("bounded grep: %d lines, last %q", len(out), out[len(out)-1])
	}
}

// failingStore fails every Get, as a blob store that is down.
type failingStore struct{ blob.Store }

func (failingStore) Get(context.Context, content.Digest) ([]byte, error) {
	return nil, errors.New("store unavailable")
}

func TestToolRuntimeFailuresAreErrors(t *testing.T) {
	f := newTestFS(t)
	down := *f.FS
	down.Blobs = failingStore{f.Blobs}
	for _, tc := range []struct {
		name string
		args obj
	}{
		{"vfs_read_file", obj{"path": "/work/README.md"}},
		{"vfs_list_dir", obj{"path": "/work"}},
		{"vfs_grep", obj{"pattern": "x"}},
		{"vfs_write_file", obj{"path": "/work/x", "content": "x"}},
	} {
		args, _ := json.Marshal(tc.args)
		if r, err := CallTool(context.Background(), &down, tc.name, args); err == nil {
			t.Errorf("%s with the store down: %+v, want an error", tc.name, r)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := CallTool(ctx, f.FS, "vfs_write_file", json.RawMessage(`{"path":"/work/x","content":"x"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write: %v", err)
	}
	// A misconfigured FS is the caller's problem, not the model's.
	bad := *f.FS
	bad.Mounts = []Mount{{Path: "/a"}}
	if _, err := CallTool(context.Background(), &bad, "vfs_list_dir", json.RawMessage(`{"path":"/"}`)); err == nil {
		t.Error("bad mount reported to the model")
	}
}
