package core_test

import (
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

func TestCache_SegmentDigestsAreShortAndNeverRefs(t *testing.T) {
	d := core.SegmentDigest([]byte(`{"role":"user","content":"hi"}`))
	if !strings.HasPrefix(d, core.SegmentDigestPrefix) || len(d) != len(core.SegmentDigestPrefix)+32 || content.IsDigestString(d) {
		t.Fatalf("segment digest %q", d)
	}
	if d != core.SegmentDigest([]byte(`{"role":"user","content":"hi"}`)) {
		t.Fatal("digest is not a function of the bytes")
	}
	// Parts are length-delimited: a role moved into the bytes is another segment.
	if core.SegmentDigest([]byte("user"), []byte("x")) == core.SegmentDigest([]byte("use"), []byte("rx")) ||
		core.SegmentDigest([]byte("user"), []byte("x")) == core.SegmentDigest([]byte("x")) {
		t.Fatal("parts are not delimited")
	}
	list, err := core.EncodeSegments([]core.CacheSegment{core.NewCacheSegment(core.EntryMessage, "", []byte("m"), []core.Entry{{ID: "e1", Key: "k"}})})
	if err != nil {
		t.Fatal(err)
	}
	if refs, err := content.ExtractRefs(list); err != nil || len(refs) != 0 {
		t.Fatalf("a segment list holds refs %v (%v): it would need edges", refs, err)
	}
	back, err := core.DecodeSegments(list)
	if err != nil || len(back) != 1 || back[0].Bytes != 1 || back[0].Entries[0] != "e1" || back[0].Keys[0] != "k" {
		t.Fatalf("decoded %+v (%v)", back, err)
	}
}

func TestCache_SharedPrefixStopsAtTheFirstDifference(t *testing.T) {
	seg := func(s string) core.CacheSegment { return core.NewCacheSegment(core.EntryMessage, "", []byte(s), nil) }
	prev := []core.CacheSegment{seg("tools"), seg("system"), seg("user")}
	for _, c := range []struct {
		name  string
		cur   []core.CacheSegment
		n     int
		bytes int64
	}{
		{"grown", append(append([]core.CacheSegment(nil), prev...), seg("assistant")), 3, 15},
		{"same", prev, 3, 15},
		{"edited middle", []core.CacheSegment{seg("tools"), seg("System"), seg("user")}, 1, 5},
		{"shorter", prev[:2], 2, 11},
		{"empty", nil, 0, 0},
	} {
		if n, b := core.SharedPrefix(prev, c.cur); n != c.n || b != c.bytes {
			t.Errorf("%s: shared %d segments, %d bytes; want %d, %d", c.name, n, b, c.n, c.bytes)
		}
	}
}

func TestCache_GenerationFactsReachTheEvent(t *testing.T) {
	h := newHarness(t, testConfig("a"))
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("q")})
	g := h.expectGenerate()
	res := core.GenerationResult{AtMs: h.tick(), RunID: g.RunID, Turn: g.Turn, Entries: []core.EntryInput{assistant("a")}, Finish: "stop"}

	bad := res
	bad.Cache = &core.CacheFacts{Model: "m", RequestBytes: 10}
	h.rejection(bad, core.RejectInvalidInput)

	res.Cache = goldenCacheFacts(g)
	h.mustAdmit(res)
	evs := h.ofKind(core.KindTurnGenerationCompleted)
	got := payload[core.TurnGenerationCompleted](t, evs[len(evs)-1]).Cache
	if got == nil || *got != *res.Cache {
		t.Fatalf("event cache facts %+v, want %+v", got, res.Cache)
	}
	// The segment list's ref is a session root, like every ref in an event.
	refs, err := content.ExtractRefs(evs[len(evs)-1].Payload)
	if err != nil || !containsDigest(refs, res.Cache.Segments.Digest) {
		t.Fatalf("refs of the event %v (%v) lack the segment list", refs, err)
	}
}

func containsDigest(ds []content.Digest, d content.Digest) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// A generation's work names the segment list of the session's last
// request that recorded one, from the log: a generation without facts
// keeps the one before, and a checkpoint keeps it.
func TestCache_GenerateWorkNamesTheLastRequestsSegments(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("one")})
	g := h.expectGenerate()
	if g.LastSegments != nil {
		t.Fatalf("the first request names a last list %v", g.LastSegments)
	}
	res := generationWithCalls(h.tick(), g)
	res.Cache = goldenCacheFacts(g)
	first := res.Cache.Segments
	h.mustAdmit(res)

	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r2", Input: input("two")})
	if g := h.answer("no facts"); g.LastSegments == nil || *g.LastSegments != first {
		t.Fatalf("the second request names %v, want the first's list %v", g.LastSegments, first)
	}
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r3", Input: input("three")})
	if g := h.expectGenerate(); g.LastSegments == nil || *g.LastSegments != first {
		t.Fatalf("after a generation without facts the request names %v, want %v", g.LastSegments, first)
	}
	data, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	restored, err := core.DecodeCheckpoint(data)
	if err != nil || restored.LastSegments == nil || *restored.LastSegments != first {
		t.Fatalf("a checkpoint keeps %v (%v), want %v", restored.LastSegments, err, first)
	}
}
