package vfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Output bounds of the tools, so one call cannot flood the model's context.
const (
	MaxReadBytes   = 256 << 10 // text returned by one vfs_read_file
	MaxGrepMatches = 200       // lines returned by one vfs_grep
	MaxGrepLine    = 500       // bytes of one matching line shown
	MaxListLines   = 1000      // lines returned by vfs_list_dir and vfs_glob
)

// ToolDef describes one model-facing tool.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments object
}

// ToolResult is a tool's output for the model. IsError marks a failure the
// model caused and can correct.
type ToolResult struct {
	Text    string
	IsError bool
}

var toolDefs = []ToolDef{
	{
		Name: "vfs_read_file",
		Description: "Read a text file of the session file system. Paths are absolute and inside the session's mounts " +
			`(list "/" to see them). Returns the file's raw text, or only lines startLine through endLine ` +
			"(1-based, inclusive) when given. Output above 256 KiB is refused: read large files in line ranges.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Absolute path of the file, such as /work/README.md."},` +
			`"startLine":{"type":"integer","minimum":1,"description":"First line to return (1-based). Default 1."},` +
			`"endLine":{"type":"integer","minimum":1,"description":"Last line to return (inclusive). Default: the last line."}` +
			`},"required":["path"],"additionalProperties":false}`),
	},
	{
		Name: "vfs_write_file",
		Description: "Create or replace a file with the given content; missing parent directories are implied. " +
			"Fails on read-only snapshot mounts, and when another writer changed the same file meanwhile " +
			"(read it again, then retry).",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Absolute path of the file to write."},` +
			`"content":{"type":"string","description":"The complete new content of the file."}` +
			`},"required":["path","content"],"additionalProperties":false}`),
	},
	{
		Name: "vfs_edit_file",
		Description: "Replace one exact occurrence of old with new in a file. old must match the file's text exactly, " +
			"including whitespace and line breaks, and occur exactly once; include surrounding lines to make it unique.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Absolute path of the file to edit."},` +
			`"old":{"type":"string","description":"The exact text to replace; must occur exactly once."},` +
			`"new":{"type":"string","description":"The replacement text."}` +
			`},"required":["path","old","new"],"additionalProperties":false}`),
	},
	{
		Name: "vfs_list_dir",
		Description: `List the immediate children of a directory, one per line: directories end with "/", ` +
			`files show their size. Listing "/" shows the mounts.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Absolute path of the directory, such as / or /work/src."}` +
			`},"required":["path"],"additionalProperties":false}`),
	},
	{
		Name: "vfs_glob",
		Description: `Find files whose paths match a glob pattern, relative to path. "*", "?" and "[...]" match ` +
			`within one path segment; "**" matches any number of segments ("**/*.go" finds Go files at any depth). ` +
			"Returns absolute paths, one per line, sorted.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Glob pattern relative to path, such as src/**/*.go."},` +
			`"path":{"type":"string","description":"Absolute directory the pattern is relative to. Default /."}` +
			`},"required":["pattern"],"additionalProperties":false}`),
	},
	{
		Name: "vfs_grep",
		Description: "Search text files for lines matching a regular expression (Go RE2 syntax). " +
			`Returns "path:line: text" lines, sorted by path and line, at most 200; binary files are skipped.`,
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Regular expression (RE2) matched against each line."},` +
			`"path":{"type":"string","description":"Absolute file or directory to search. Default /."},` +
			`"glob":{"type":"string","description":"Only search files matching this glob: without a \"/\" it matches ` +
			`file names (*.go), with one it matches paths relative to path (src/**/*.go)."}` +
			`},"required":["pattern"],"additionalProperties":false}`),
	},
}

// ToolDefs returns the vfs tools in a stable order.
func ToolDefs() []ToolDef {
	out := make([]ToolDef, len(toolDefs))
	for i, d := range toolDefs {
		d.Parameters = bytes.Clone(d.Parameters)
		out[i] = d
	}
	return out
}

// CallTool runs tool name on raw JSON args. Errors the model caused (bad
// args, missing file, conflict, read-only, limits) are ToolResult{IsError:
// true} with a clear message; a returned error is only for runtime failures
// (blob store down, context cancelled, a misconfigured FS).
func CallTool(ctx context.Context, fs *FS, name string, args json.RawMessage) (ToolResult, error) {
	var text string
	var err error
	switch name {
	case "vfs_read_file":
		text, err = readTool(ctx, fs, args)
	case "vfs_write_file":
		text, err = writeTool(ctx, fs, args)
	case "vfs_edit_file":
		text, err = editTool(ctx, fs, args)
	case "vfs_list_dir":
		text, err = listTool(ctx, fs, args)
	case "vfs_glob":
		text, err = globTool(ctx, fs, args)
	case "vfs_grep":
		text, err = grepTool(ctx, fs, args)
	default:
		return ToolResult{Text: fmt.Sprintf("unknown tool %q", name), IsError: true}, nil
	}
	if err == nil {
		return ToolResult{Text: text}, nil
	}
	if isModelError(err) {
		return ToolResult{Text: err.Error(), IsError: true}, nil
	}
	return ToolResult{}, err
}

// modelError is a mistake in a tool call that the tool detects itself.
type modelError struct{ msg string }

func (e *modelError) Error() string { return e.msg }

func badCall(format string, args ...any) error { return &modelError{msg: fmt.Sprintf(format, args...)} }

func isModelError(err error) bool {
	var se *storeError
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var me *modelError
	for _, target := range []error{ErrNotFound, ErrInvalidPath, ErrInvalidManifest, ErrLimit,
		ErrReadOnly, ErrHeadMoved, ErrEditMatch, path.ErrBadPattern} {
		if errors.Is(err, target) {
			return true
		}
	}
	return errors.As(err, &me)
}

// decodeArgs decodes args into v, refusing unknown fields and trailing data.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badCall("invalid arguments for %s: %v", tool, err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return badCall("invalid arguments for %s: trailing data after the JSON object", tool)
	}
	return nil
}

// requireFields reports the first of the named required fields that is
// absent (a nil pointer).
func requireFields(tool string, names []string, vals ...*string) error {
	for i, v := range vals {
		if v == nil {
			return badCall("invalid arguments for %s: missing required field %q", tool, names[i])
		}
	}
	return nil
}

func readTool(ctx context.Context, fs *FS, args json.RawMessage) (string, error) {
	var a struct {
		Path      *string `json:"path"`
		StartLine *int    `json:"startLine"`
		EndLine   *int    `json:"endLine"`
	}
	if err := decodeArgs("vfs_read_file", args, &a); err != nil {
		return "", err
	}
	if err := requireFields("vfs_read_file", []string{"path"}, a.Path); err != nil {
		return "", err
	}
	data, e, err := fs.ReadFile(ctx, *a.Path)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(data) {
		return "", badCall("%s is not UTF-8 text (%d bytes, %s); vfs_read_file shows text files only", *a.Path, e.Size, e.Ref.MediaType)
	}
	lines := splitLines(string(data))
	start, end := 1, len(lines)
	if a.StartLine != nil {
		start = *a.StartLine
	}
	if a.EndLine != nil {
		end = *a.EndLine
	}
	switch {
	case start < 1:
		return "", badCall("startLine %d is invalid; lines are numbered from 1", start)
	case a.EndLine != nil && end < start:
		return "", badCall("endLine %d is before startLine %d", end, start)
	case len(lines) == 0:
		return "", nil
	case start > len(lines):
		return "", badCall("startLine %d is past the end of %s, which has %d lines", start, *a.Path, len(lines))
	}
	end = min(end, len(lines))
	text := strings.Join(lines[start-1:end], "")
	if len(text) > MaxReadBytes {
		// Suggest the longest range from start that fits.
		fit, size := start-1, 0
		for fit < end && size+len(lines[fit]) <= MaxReadBytes {
			size += len(lines[fit])
			fit++
		}
		if fit < start {
			return "", badCall("%s line %d alone is %d bytes, more than the %d-byte read limit", *a.Path, start, len(lines[start-1]), MaxReadBytes)
		}
		return "", badCall("%s lines %d-%d are %d bytes, more than the %d-byte read limit; read a line range, such as startLine %d, endLine %d",
			*a.Path, start, end, len(text), MaxReadBytes, start, fit)
	}
	return text, nil
}

// splitLines splits s into lines that keep their "\n"; a final newline does
// not start another line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func writeResultText(verb string, r WriteResult) string {
	return fmt.Sprintf("%s %s (%d bytes); workspace %q is now at revision %d.", verb, r.Path, r.Entry.Size, r.Workspace, r.Revision)
}

func writeTool(ctx context.Context, fs *FS, args json.RawMessage) (string, error) {
	var a struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
	}
	if err := decodeArgs("vfs_write_file", args, &a); err != nil {
		return "", err
	}
	if err := requireFields("vfs_write_file", []string{"path", "content"}, a.Path, a.Content); err != nil {
		return "", err
	}
	r, err := fs.WriteFile(ctx, *a.Path, []byte(*a.Content))
	if err != nil {
		return "", err
	}
	return writeResultText("Wrote", r), nil
}

func editTool(ctx context.Context, fs *FS, args json.RawMessage) (string, error) {
	var a struct {
		Path *string `json:"path"`
		Old  *string `json:"old"`
		New  *string `json:"new"`
	}
	if err := decodeArgs("vfs_edit_file", args, &a); err != nil {
		return "", err
	}
	if err := requireFields("vfs_edit_file", []string{"path", "old", "new"}, a.Path, a.Old, a.New); err != nil {
		return "", err
	}
	r, err := fs.EditFile(ctx, *a.Path, *a.Old, *a.New)
	if err != nil {
		return "", err
	}
	return writeResultText("Edited", r), nil
}

func listTool(ctx context.Context, fs *FS, args json.RawMessage) (string, error) {
	var a struct {
		Path *string `json:"path"`
	}
	if err := decodeArgs("vfs_list_dir", args, &a); err != nil {
		return "", err
	}
	if err := requireFields("vfs_list_dir", []string{"path"}, a.Path); err != nil {
		return "", err
	}
	kids, err := fs.List(ctx, *a.Path)
	if err != nil {
		return "", err
	}
	if len(kids) == 0 {
		return "(empty directory)", nil
	}
	lines := make([]string, len(kids))
	for i, k := range kids {
		if k.IsDir {
			lines[i] = k.Name + "/"
		} else {
			lines[i] = fmt.Sprintf("%s (%d bytes)", k.Name, k.Entry.Size)
		}
	}
	return joinBounded(lines, MaxListLines, "entries", "list a subdirectory"), nil
}

// joinBounded joins at most limit lines, noting how many were left out.
func joinBounded(lines []string, limit int, what, hint string) string {
	if len(lines) <= limit {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:limit], "\n") + fmt.Sprintf("\n[%d more %s not shown; %s]", len(lines)-limit, what, hint)
}

// dirArg cleans an optional directory argument, "/" when absent.
func dirArg(p *string) (string, error) {
	if p == nil {
		return "/", nil
	}
	return cleanAbs(*p)
}

func globTool(ctx context.Context, fs *FS, args json.RawMessage) (string, error) {
	var a struct {
		Pattern *string `json:"pattern"`
		Path    *string `json:"path"`
	}
	if err := decodeArgs("vfs_glob", args, &a); err != nil {
		return "", err
	}
	if err := requireFields("vfs_glob", []string{"pattern"}, a.Pattern); err != nil {
		return "", err
	}
	dir, err := dirArg(a.Path)
	if err != nil {
		return "", err
	}
	pattern := *a.Pattern
	switch {
	case pattern == "":
		return "", badCall("empty glob pattern")
	case strings.HasPrefix(pattern, "/") && dir != "/":
		// Ambiguous: an absolute pattern cannot also be relative to path.
		return "", badCall("pattern %q is absolute; give a relative pattern with path, or an absolute pattern without path", pattern)
	case !strings.HasPrefix(pattern, "/"):
		pattern = joinAbs(dir, pattern)
	}
	paths, err := fs.Glob(ctx, pattern)
	if err != nil {
		return "", err
	}
	if len(paths) == 0 {
		return fmt.Sprintf("No files match %s.", pattern), nil
	}
	return joinBounded(paths, MaxListLines, "paths", "narrow the pattern"), nil
}

func grepTool(ctx context.Context, fs *FS, args json.RawMessage) (string, error) {
	var a struct {
		Pattern *string `json:"pattern"`
		Path    *string `json:"path"`
		Glob    *string `json:"glob"`
	}
	if err := decodeArgs("vfs_grep", args, &a); err != nil {
		return "", err
	}
	if err := requireFields("vfs_grep", []string{"pattern"}, a.Pattern); err != nil {
		return "", err
	}
	re, err := regexp.Compile(*a.Pattern)
	if err != nil {
		return "", badCall("invalid pattern: %v", err)
	}
	dir, err := dirArg(a.Path)
	if err != nil {
		return "", err
	}
	var globSegs []string
	if a.Glob != nil && *a.Glob != "" {
		globSegs = strings.Split(strings.TrimPrefix(*a.Glob, "/"), "/")
		for _, s := range globSegs {
			if _, err := path.Match(s, ""); err != nil {
				return "", badCall("invalid glob %q: %v", *a.Glob, err)
			}
		}
	}
	files, err := fs.Walk(ctx, dir)
	if err != nil {
		return "", err
	}
	var out []string
	for _, f := range files {
		if globSegs != nil && !grepGlobMatch(globSegs, dir, f) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		data, err := fs.Blobs.Get(ctx, f.Entry.Ref.Digest)
		if err != nil {
			return "", &storeError{op: "read " + f.Path, err: err}
		}
		if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		for i, line := range splitLines(string(data)) {
			line = strings.TrimRight(line, "\r\n")
			if !re.MatchString(line) {
				continue
			}
			if len(out) == MaxGrepMatches {
				out = append(out, fmt.Sprintf("[stopped after %d matches; narrow the pattern, path or glob]", MaxGrepMatches))
				return strings.Join(out, "\n"), nil
			}
			out = append(out, fmt.Sprintf("%s:%d: %s", f.Path, i+1, truncateUTF8(line, MaxGrepLine)))
		}
	}
	if len(out) == 0 {
		return "No matches.", nil
	}
	return strings.Join(out, "\n"), nil
}

// grepGlobMatch applies a grep glob: one segment matches the file name, more
// match the path relative to the searched directory.
func grepGlobMatch(segs []string, dir string, f FileInfo) bool {
	if len(segs) == 1 {
		ok, _ := path.Match(segs[0], f.Name)
		return ok
	}
	rel := strings.TrimPrefix(f.Path, dir)
	rel = strings.TrimPrefix(rel, "/")
	if rel == "" { // the searched path is the file itself
		rel = f.Name
	}
	return matchSegs(segs, strings.Split(rel, "/"))
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary, marking the cut.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + " …[line truncated]"
}
