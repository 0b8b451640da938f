package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/payloads"
)

// payloadDir holds the shared recorded responses; they are read in place,
// never copied into the repository.
var payloadDir = payloads.Dir("responses")

func payloadFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(payloadDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no payloads under %s", payloadDir)
	}
	sort.Strings(files)
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

func readPayload(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(payloadDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ctxBuilder plays the core's part in tests: it stores inputs, assigns ids
// (e1, e2, …) and keeps the active context in order.
type ctxBuilder struct {
	t       *testing.T
	blobs   blob.Store
	entries []core.Entry
	next    int
}

func newCtx(t *testing.T) *ctxBuilder {
	return &ctxBuilder{t: t, blobs: blob.NewMemory()}
}

func (b *ctxBuilder) add(in core.EntryInput, source string) core.Entry {
	b.next++
	e := core.Entry{
		ID: fmt.Sprintf("e%d", b.next), Key: in.Key, Kind: in.Kind, Role: in.Role, Source: source,
		Content: in.Content, TokenEstimate: in.TokenEstimate, Preview: in.Preview,
		CallID: in.CallID, ToolName: in.ToolName,
	}
	b.entries = append(b.entries, e)
	return e
}

func (b *ctxBuilder) put(data []byte, media string) content.ContentRef {
	b.t.Helper()
	ref, err := blob.PutRef(context.Background(), b.blobs, data, media, "")
	if err != nil {
		b.t.Fatal(err)
	}
	return ref
}

// instructions adds an instruction entry, or replaces the active one with the
// same key in place (ordinary keyed entries replace their earlier version).
func (b *ctxBuilder) instructions(key, text string) {
	in := core.EntryInput{Key: key, Kind: core.EntryInstructions, Content: b.put([]byte(text), content.MediaText)}
	for i, e := range b.entries {
		if e.Key == key {
			b.next++
			b.entries[i] = core.Entry{ID: fmt.Sprintf("e%d", b.next), Key: key, Kind: in.Kind, Source: core.SourceAPI, Content: in.Content}
			return
		}
	}
	b.add(in, core.SourceAPI)
}

func (b *ctxBuilder) user(text string) {
	b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleUser, Content: b.put([]byte(text), content.MediaText)}, core.SourceUser)
}

func (b *ctxBuilder) toolResult(callID, name, text string) {
	b.add(core.EntryInput{Kind: core.EntryToolResult, Content: b.put([]byte(text), content.MediaText), CallID: callID, ToolName: name}, core.SourceTool)
}

// admit appends a generation's output the way the core does: every entry, and
// when the generation failed, without its tool calls.
func (b *ctxBuilder) admit(entries []core.EntryInput, failed bool) []core.Entry {
	var out []core.Entry
	for _, in := range entries {
		if failed && in.Kind == core.EntryToolCall {
			continue
		}
		out = append(out, b.add(in, core.SourceModel))
	}
	return out
}

// decode decodes a recorded response into this context and answers every
// tool call the way the runtime would, after all the output entries.
func (b *ctxBuilder) decode(body []byte) ([]core.Entry, []core.ToolCall) {
	b.t.Helper()
	out, err := Decode(context.Background(), b.blobs, body)
	if err != nil {
		b.t.Fatal(err)
	}
	entries := b.admit(out.Entries, false)
	for _, c := range out.ToolCalls {
		b.toolResult(c.CallID, c.Name, `{"ok":true,"call":"`+c.CallID+`"}`)
	}
	return entries, out.ToolCalls
}

func (b *ctxBuilder) get(ref content.ContentRef) []byte {
	b.t.Helper()
	data, err := b.blobs.Get(context.Background(), ref.Digest)
	if err != nil {
		b.t.Fatal(err)
	}
	return data
}

// members decodes a JSON object into raw members (test-side, independent of rawjson).
func members(t *testing.T, raw []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %v: %s", err, raw)
	}
	return m
}

func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("not a string: %s", raw)
	}
	return s
}

// canon canonicalises a JSON value, for JSON-equality checks.
func canon(t *testing.T, raw []byte) string {
	t.Helper()
	if len(raw) == 0 {
		return "null"
	}
	c, err := content.Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// originalItems returns the output items of a recorded response, as written.
func originalItems(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var env struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("bad fixture: %v", err)
	}
	return env.Output
}

// requestBody is a lowered request, split for checks.
type requestBody struct {
	Instructions *string           `json:"instructions"`
	Input        []json.RawMessage `json:"input"`
	Tools        []json.RawMessage `json:"tools"`
}

func parseRequest(t *testing.T, body []byte) requestBody {
	t.Helper()
	var r requestBody
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("request is not JSON: %v: %s", err, body)
	}
	return r
}

// rawMember returns the exact bytes of a top-level member of a compact JSON
// object, located by scanning (test-side, independent of rawjson).
func rawMember(t *testing.T, body []byte, name string) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		start := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if tok == name {
			// InputOffset after the key points just past it; the value starts
			// after the ':' separator.
			raw := body[start:dec.InputOffset()]
			raw = bytes.TrimLeft(raw, ": \t\n\r")
			return raw
		}
	}
	t.Fatalf("no member %q", name)
	return nil
}
