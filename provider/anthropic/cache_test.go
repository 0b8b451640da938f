package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
)

// marked returns, for a parsed request, where the markers are: "system:i",
// "tool:i", "msg:i:j".
func marked(t *testing.T, body []byte) []string {
	t.Helper()
	r := parseReq(t, body)
	var out []string
	has := func(raw []byte) bool { return bytes.Contains(raw, []byte(`"cache_control"`)) }
	for i, b := range r.System {
		if has(b) {
			out = append(out, "system:"+itoa(i))
		}
	}
	for i, b := range r.Tools {
		if has(b) {
			out = append(out, "tool:"+itoa(i))
		}
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if has(b) {
				out = append(out, "msg:"+itoa(i)+":"+itoa(j))
				if typ := blockType(t, b); typ == typeThinking || typ == typeRedactedThinking {
					t.Fatalf("marker on a %s block", typ)
				}
				var tb struct {
					Citations []json.RawMessage `json:"citations"`
				}
				_ = json.Unmarshal(b, &tb)
				if len(tb.Citations) > 0 {
					t.Fatalf("marker on a cited block: %s", b)
				}
			}
		}
	}
	if len(out) > 4 {
		t.Fatalf("%d markers: %v", len(out), out)
	}
	return out
}

func itoa(i int) string { return fmt.Sprintf("%02d", i) }

func TestCacheMarkerPlacement(t *testing.T) {
	b := goldenContext(t)
	got := marked(t, b.lower())
	// system's last block, the last tool, the last message's last block, and
	// the previous request's last message ("And the schedule?", message 4).
	want := []string{"system:01", "tool:02", "msg:04:00", "msg:06:00"}
	if len(got) != len(want) {
		t.Fatalf("markers %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("markers %v, want %v", got, want)
		}
	}
}

func TestCacheMarkerSkipsThinkingAndCitedBlocks(t *testing.T) {
	// A pause_turn continuation ends with the assistant's blocks: the last
	// block is cited, so the marker goes on the block before it.
	b := newCtx(t)
	b.user("q")
	conv, err := lowerContext(context.Background(), b.blobs, b.entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseResponse(scriptedWebSearch(1))
	if err != nil {
		t.Fatal(err)
	}
	cont, err := conv.withAssistant(r.blocks)
	if err != nil {
		t.Fatal(err)
	}
	body, err := cont.body("m", params{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := marked(t, body); len(got) != 2 || got[0] != "msg:00:00" || got[1] != "msg:01:02" {
		t.Fatalf("markers %v: %s", got, body)
	}

	// Only thinking and cited text in the last message: no marker there.
	r, _ = parseResponse([]byte(`{"type":"message","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"x","citations":[{"type":"char_location","cited_text":"x","document_index":0,"start_char_index":0,"end_char_index":1}]},{"type":"text","text":""}],"stop_reason":"pause_turn"}`))
	cont, _ = conv.withAssistant(r.blocks)
	body, _ = cont.body("m", params{}, nil)
	if got := marked(t, body); len(got) != 1 || got[0] != "msg:00:00" {
		t.Fatalf("markers %v: %s", got, body)
	}
}

func TestCacheMarkerTTL(t *testing.T) {
	for _, ttl := range []string{"5m", "1h"} {
		b := goldenContext(t)
		req := b.request()
		req.Params = json.RawMessage(`{"cacheTtl":"` + ttl + `","version":1}`)
		body, err := Lower(context.Background(), b.blobs, req)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(body, []byte(`"cache_control":{"type":"ephemeral","ttl":"`+ttl+`"}`))
		if n != 4 || bytes.Count(body, []byte(`"cache_control"`)) != 4 {
			t.Fatalf("%s: %d markers with the ttl", ttl, n)
		}
	}
}

func TestCacheMarkersNeverTouchStoredBytes(t *testing.T) {
	b := goldenContext(t)
	before := map[int][]byte{}
	for i, e := range b.entries {
		before[i] = append([]byte(nil), b.get(e.Content)...)
	}
	first := b.lower()
	for i, e := range b.entries {
		after := b.get(e.Content)
		if !bytes.Equal(before[i], after) || bytes.Contains(after, []byte("cache_control")) {
			t.Fatalf("entry %s changed in storage", e.ID)
		}
	}
	if !bytes.Equal(first, b.lower()) {
		t.Fatal("lowering twice gave different bytes: something was modified in place")
	}
}

func TestCacheMarkersAtMostFourAcrossAllPayloads(t *testing.T) {
	b := newCtx(t)
	b.instructions("instructions.a", "A.")
	b.instructions("instructions.b", "") // empty: the marker goes on "A."
	b.user("start")
	for _, f := range payloadFiles(t) {
		b.decode(readPayload(t, filepath.Base(f)))
		b.user("after " + filepath.Base(f))
		got := marked(t, b.lower())
		if len(got) != 4 || got[0] != "system:00" {
			t.Fatalf("after %s: markers %v", filepath.Base(f), got)
		}
	}
}

func TestNoSystemNoToolsNoMarkersThere(t *testing.T) {
	b := newCtx(t)
	b.user("q")
	req := b.request()
	req.Tools = nil
	body, err := Lower(context.Background(), b.blobs, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := marked(t, body); len(got) != 1 || got[0] != "msg:00:00" {
		t.Fatalf("markers %v", got)
	}
}

func TestWithMarkerReplacesAnExistingOne(t *testing.T) {
	b := block{raw: []byte(`{"type":"tool_result","cache_control":{"type":"ephemeral","ttl":"1h"},"tool_use_id":"t"}`), typ: typeToolResult}
	if got := string(b.withMarker(cacheControl(""))); got != `{"type":"tool_result","tool_use_id":"t","cache_control":{"type":"ephemeral"}}` {
		t.Fatal(got)
	}
	if got := string((block{raw: []byte(`{}`)}).withMarker(cacheControl("5m"))); got != `{"cache_control":{"type":"ephemeral","ttl":"5m"}}` {
		t.Fatal(got)
	}
}
