package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/internal/payloads"
	"github.com/cairn-agents/cairn/provider"
)

// payloadDir holds the shared recorded responses; they are read in place, never copied.
var payloadDir = payloads.Dir("anthropic")

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

// ctxBuilder plays the core's part in tests: it stores inputs and assigns
// ids e1, e2, ….
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

func (b *ctxBuilder) instructions(key, text string) core.Entry {
	return b.add(core.EntryInput{Key: key, Kind: core.EntryInstructions, Content: b.put([]byte(text), content.MediaText)}, core.SourceAPI)
}

func (b *ctxBuilder) user(text string) core.Entry {
	return b.add(core.EntryInput{Kind: core.EntryMessage, Role: core.RoleUser, Content: b.put([]byte(text), content.MediaText)}, core.SourceUser)
}

func (b *ctxBuilder) toolResult(callID, name, text string) core.Entry {
	return b.add(core.EntryInput{Kind: core.EntryToolResult, Content: b.put([]byte(text), content.MediaText), CallID: callID, ToolName: name}, core.SourceTool)
}

// admit adds an output's entries the way the core does: a failed output
// loses its tool_call entries.
func (b *ctxBuilder) admit(out provider.Output) []core.Entry {
	var added []core.Entry
	for _, in := range out.Entries {
		if out.Failure != nil && in.Kind == core.EntryToolCall {
			continue
		}
		added = append(added, b.add(in, core.SourceModel))
	}
	return added
}

// decode decodes a recorded response into this context and answers every
// tool call the way the runtime would.
func (b *ctxBuilder) decode(body []byte) (provider.Output, []core.Entry) {
	b.t.Helper()
	out, err := Decode(context.Background(), b.blobs, body)
	if err != nil {
		b.t.Fatal(err)
	}
	added := b.admit(out)
	if out.Failure == nil {
		for _, c := range out.ToolCalls {
			b.toolResult(c.CallID, c.Name, `{"ok":true,"call":"`+c.CallID+`"}`)
		}
	}
	return out, added
}

func (b *ctxBuilder) get(ref content.ContentRef) []byte {
	b.t.Helper()
	data, err := b.blobs.Get(context.Background(), ref.Digest)
	if err != nil {
		b.t.Fatal(err)
	}
	return data
}

func (b *ctxBuilder) request() provider.Request {
	return provider.Request{
		SessionID: "sess-01",
		Model:     core.ModelSelection{ProviderID: "anthropic", APIKind: APIKind, Model: "claude-sonnet-4-5"},
		Entries:   b.entries,
		Tools:     testTools,
	}
}

func (b *ctxBuilder) lower() []byte {
	b.t.Helper()
	body, err := Lower(context.Background(), b.blobs, b.request())
	if err != nil {
		b.t.Fatal(err)
	}
	if !json.Valid(body) {
		b.t.Fatalf("invalid JSON: %s", body)
	}
	return body
}

var testTools = []provider.Tool{
	{Name: "weather", Description: "Weather for a location.", Parameters: json.RawMessage(`{
		"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}`)},
	{Name: "search", Description: "Search the web <fast> & cheap.", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
	{Name: "noop"},
}

// reqBody is a request body parsed for inspection (test-side, with
// encoding/json, independent of the adapter's own reader).
type reqBody struct {
	Model     string            `json:"model"`
	MaxTokens int64             `json:"max_tokens"`
	System    []json.RawMessage `json:"system"`
	Tools     []json.RawMessage `json:"tools"`
	Messages  []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
}

func parseReq(t *testing.T, body []byte) reqBody {
	t.Helper()
	var r reqBody
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("request is not JSON: %v", err)
	}
	return r
}

// originalContent returns the content blocks of a recorded response, compacted.
func originalContent(t *testing.T, body []byte) [][]byte {
	t.Helper()
	var env struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("bad fixture: %v", err)
	}
	out := make([][]byte, len(env.Content))
	for i, c := range env.Content {
		out[i] = compact(t, c)
	}
	return out
}

func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// canon canonicalises a JSON value; a missing value canonicalises as null.
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

func blockType(t *testing.T, raw []byte) string {
	t.Helper()
	var v struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v.Type
}

// markerRE matches every cache marker the adapter adds (any ttl).
var markerRE = regexp.MustCompile(`,?"cache_control":\{"type":"ephemeral"(,"ttl":"(5m|1h)")?\}`)

// stripMarkers removes cache markers, the comparison cache.go documents.
func stripMarkers(body []byte) []byte { return markerRE.ReplaceAll(body, nil) }

func countMarkers(body []byte) int { return len(markerRE.FindAll(body, -1)) }

// withoutMarker returns a block with its cache_control member removed, for
// comparing a sent block with the stored one.
func withoutMarker(raw []byte) []byte { return stripMarkers(raw) }

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
