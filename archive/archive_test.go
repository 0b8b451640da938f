package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// sample is an archive of two sessions (the second a fork of the first at
// 2) and one workspace, with events whose payloads are not compact JSON.
type sample struct {
	m      Manifest
	blobs  [][]byte
	events [][]core.Event
}

func newSample(n int) sample {
	a, b := []byte("first blob"), []byte("second blob")
	digests := []content.Digest{content.Sum(a), content.Sum(b)}
	content.SortDigests(digests)
	ordered := [][]byte{a, b}
	if digests[0] != content.Sum(a) {
		ordered = [][]byte{b, a}
	}
	ev := func(seq int64) core.Event {
		return core.Event{Seq: seq, ObservedAtMs: 1000 + seq, Joins: []string{"run:r1"}, Kind: "context.appended", Version: 1,
			Payload: json.RawMessage(fmt.Sprintf(`{ "n": %d, "html": "<b>&</b>" }`, seq))}
	}
	var one, two []core.Event
	for i := int64(1); i <= int64(n); i++ {
		one = append(one, ev(i))
	}
	two = append(two, ev(3), ev(4))
	return sample{
		m: Manifest{
			Sessions:   []Session{{ID: "s1", Head: int64(n)}, {ID: "s2", Head: 4, ForkOf: &store.Source{SessionID: "s1", AtSeq: 2}}},
			Workspaces: []Workspace{{Name: "notes", Head: digests[0]}},
			Blobs:      digests,
			Edges:      []Edge{{Parent: digests[0], Children: digests[1:]}},
		},
		blobs:  ordered,
		events: [][]core.Event{one, two},
	}
}

func (s sample) write(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, s.m)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range s.blobs {
		if err := w.Blob(content.Sum(b), b); err != nil {
			t.Fatal(err)
		}
	}
	for i, evs := range s.events {
		if err := w.Events(i, evs); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads an archive to its end and returns what it held.
func readAll(data []byte, lim Limits) (Manifest, [][]byte, [][]core.Event, error) {
	r, err := NewReader(bytes.NewReader(data), lim)
	if err != nil {
		return Manifest{}, nil, nil, err
	}
	defer r.Close()
	var blobs [][]byte
	events := make([][]core.Event, len(r.Manifest.Sessions))
	for {
		e, err := r.Next()
		if err == io.EOF {
			return r.Manifest, blobs, events, nil
		}
		if err != nil {
			return r.Manifest, blobs, events, err
		}
		if e.Blob != nil {
			blobs = append(blobs, bytes.Clone(e.Data))
		} else {
			events[e.Session] = append(events[e.Session], e.Events...)
		}
	}
}

func TestRoundTripKeepsEveryByte(t *testing.T) {
	s := newSample(5)
	m, blobs, events, err := readAll(s.write(t), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != Format || m.Version != Version || len(m.Sessions) != 2 || m.Sessions[1].ForkOf.AtSeq != 2 {
		t.Fatalf("manifest = %+v", m)
	}
	if len(blobs) != 2 || !bytes.Equal(blobs[0], s.blobs[0]) || !bytes.Equal(blobs[1], s.blobs[1]) {
		t.Fatalf("blobs = %q", blobs)
	}
	for i := range events {
		if len(events[i]) != len(s.events[i]) {
			t.Fatalf("session %d: %d events, want %d", i, len(events[i]), len(s.events[i]))
		}
		for j, ev := range events[i] {
			want := s.events[i][j]
			if ev.Seq != want.Seq || ev.ObservedAtMs != want.ObservedAtMs || ev.Kind != want.Kind || ev.Version != want.Version ||
				strings.Join(ev.Joins, ",") != strings.Join(want.Joins, ",") || !bytes.Equal(ev.Payload, want.Payload) {
				t.Fatalf("session %d event %d = %+v (%s), want %+v (%s)", i, j, ev, ev.Payload, want, want.Payload)
			}
		}
	}
}

// A long session's events are split into entries of about EventsChunkBytes.
func TestLongSessionsAreChunked(t *testing.T) {
	s := newSample(60_000)
	data := s.write(t)
	r, err := NewReader(bytes.NewReader(data), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	chunks := 0
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Events != nil && e.Session == 0 {
			chunks++
			if len(e.Data) > EventsChunkBytes+maxEventBytes {
				t.Fatalf("chunk of %d bytes", len(e.Data))
			}
		}
	}
	if chunks < 2 {
		t.Fatalf("%d chunks for 60,000 events", chunks)
	}
}

func kindOf(err error) string {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Kind
	}
	return ""
}

// rewrite writes an archive from entries changed by edit: the way an
// attacker or a damaged disk would produce one.
func rewrite(t *testing.T, s sample, edit func(m *Manifest, blobs [][]byte, events [][]core.Event) ([][]byte, [][]core.Event)) []byte {
	t.Helper()
	m := s.m
	blobs, events := edit(&m, append([][]byte{}, s.blobs...), append([][]core.Event{}, s.events...))
	var buf bytes.Buffer
	w, err := NewWriter(&buf, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if err := w.entry(blobName(content.Sum(b)), b); err != nil {
			t.Fatal(err)
		}
	}
	for i, evs := range events {
		var lines bytes.Buffer
		for _, ev := range evs {
			if err := appendEventLine(&lines, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.entry(eventsName(i, 0), lines.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	w.tw.Close()
	w.zw.Close()
	return buf.Bytes()
}

func TestRefusals(t *testing.T) {
	s := newSample(5)
	whole := s.write(t)
	cases := map[string]struct {
		data []byte
		lim  Limits
		kind string
	}{
		"truncated mid-stream":         {data: whole[:len(whole)/2], kind: KindTruncated},
		"truncated to nothing":         {data: nil, kind: KindTruncated},
		"truncated in its first bytes": {data: whole[:12], kind: KindTruncated},
		"not an archive":               {data: []byte("PK\x03\x04 a zip file, say"), kind: KindInvalid},
		"newer major version":          {data: rawManifest(t, `{"format":"cairn-archive","version":"2.0","sessions":[]}`), kind: KindVersion},
		"not an archive manifest":      {data: rawManifest(t, `{"format":"zip","version":"1.0"}`), kind: KindInvalid},
		"oversized manifest":           {data: whole, lim: Limits{ManifestBytes: 10, BlobBytes: 1 << 20, EventsBytes: 1 << 20, Entries: 100}, kind: KindTooLarge},
		"oversized blob":               {data: whole, lim: Limits{ManifestBytes: 1 << 20, BlobBytes: 3, EventsBytes: 1 << 20, Entries: 100}, kind: KindTooLarge},
		"too many entries":             {data: whole, lim: Limits{ManifestBytes: 1 << 20, BlobBytes: 1 << 20, EventsBytes: 1 << 20, Entries: 2}, kind: KindTooLarge},
		"tampered blob": {data: rewrite(t, s, func(m *Manifest, blobs [][]byte, events [][]core.Event) ([][]byte, [][]core.Event) {
			tampered := append([]byte{}, blobs[0]...)
			tampered[0] ^= 1
			return [][]byte{tampered, blobs[1]}, events
		}), kind: KindInvalid}, // its name is another digest, which the manifest does not list
		"gap in events": {data: rewrite(t, s, func(m *Manifest, blobs [][]byte, events [][]core.Event) ([][]byte, [][]core.Event) {
			one := append([]core.Event{}, events[0][:2]...)
			one = append(one, events[0][3:]...)
			return blobs, [][]core.Event{one, events[1]}
		}), kind: KindEventsGap},
		"events stop before the head": {data: rewrite(t, s, func(m *Manifest, blobs [][]byte, events [][]core.Event) ([][]byte, [][]core.Event) {
			return blobs, [][]core.Event{events[0][:4], events[1]}
		}), kind: KindEventsGap},
		"a session never comes": {data: rewrite(t, s, func(m *Manifest, blobs [][]byte, events [][]core.Event) ([][]byte, [][]core.Event) {
			return blobs, events[:1]
		}), kind: KindTruncated},
		"fork before its source": {data: rewrite(t, s, func(m *Manifest, blobs [][]byte, events [][]core.Event) ([][]byte, [][]core.Event) {
			m.Sessions = []Session{m.Sessions[1], m.Sessions[0]}
			return blobs, events
		}), kind: KindInvalid},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			lim := c.lim
			if lim == (Limits{}) {
				lim = DefaultLimits
			}
			_, _, _, err := readAll(c.data, lim)
			if kindOf(err) != c.kind {
				t.Fatalf("err = %v, want kind %s", err, c.kind)
			}
		})
	}
}

// A blob entry whose bytes differ from its name is a mismatch.
func TestBlobWhoseBytesDoNotMatchItsName(t *testing.T) {
	s := newSample(5)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, s.m)
	if err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte{}, s.blobs[0]...)
	tampered[0] ^= 1
	if err := w.entry(blobName(content.Sum(s.blobs[0])), tampered); err != nil {
		t.Fatal(err)
	}
	w.tw.Close()
	w.zw.Close()
	_, _, _, err = readAll(buf.Bytes(), DefaultLimits)
	if kindOf(err) != KindBlobMismatch || !strings.Contains(err.Error(), s.m.Blobs[0].Hex()) {
		t.Fatalf("err = %v", err)
	}
}

// rawManifest is an archive of one manifest entry with the given bytes.
func rawManifest(t *testing.T, manifest string) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := newWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.entry(ManifestName, []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	w.tw.Close()
	w.zw.Close()
	return out.Bytes()
}

func TestNamesAreOnlyTheFormatsOwn(t *testing.T) {
	for _, name := range []string{"../etc/passwd", "/blobs/x", "blobs/../manifest.json", "blobs/ABC", "sessions/01/events-0.jsonl",
		"sessions/1/events-+1.jsonl", "sessions/-1/events-0.jsonl", "sessions/1/events-0.json"} {
		_, okBlob := parseBlobName(name)
		_, _, okEvents := parseEventsName(name)
		if okBlob || okEvents {
			t.Errorf("%q was accepted", name)
		}
	}
	d := content.Sum([]byte("x"))
	if got, ok := parseBlobName(blobName(d)); !ok || got != d {
		t.Fatal("a blob name does not parse back")
	}
	if s, c, ok := parseEventsName(eventsName(12, 3)); !ok || s != 12 || c != 3 {
		t.Fatal("an events name does not parse back")
	}
}
