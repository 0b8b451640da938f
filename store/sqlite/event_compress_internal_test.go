package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// The dictionary of encoding "zd1" decodes every row written with it: it
// must never change (a new dictionary is a new encoding).
func TestEventDictionary1NeverChanges(t *testing.T) {
	sum := sha256.Sum256([]byte(eventDictionary1))
	if got := hex.EncodeToString(sum[:]); got != eventDictionary1SHA256 {
		t.Fatalf("eventDictionary1 changed (sha256 %s): rows stored with zd1 would no longer decode; add a new encoding instead", got)
	}
}

const eventDictionary1SHA256 = "99ad3a00dfa11210645f4b268a91f7ecd8599dbf7ab9d94c38204d70c53a245b"

// typicalEntry is a context.entries_applied payload as a chat turn writes.
const typicalEntry = `{"baseRevision":7,"entries":[{"entryId":"e8","kind":"message","role":"user","source":"user","content":{"digest":"sha256:0b00ef27f09eeab085fc7a61bef343b40f4b86acbc39de3f5f6bb7ec99c8f7f9","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":17,"quality":"heuristic"},"preview":"Turn 4: a short message","origin":"user:","runId":"run_418c4c98ecb6f614"}]}`

type eventRow struct {
	joins    sql.NullString
	payload  []byte
	encoding sql.NullString
}

func readEventRow(t *testing.T, s *Store, sessionID string, seq int64) eventRow {
	t.Helper()
	var r eventRow
	if err := s.reader.QueryRow(`SELECT joins, payload, encoding FROM events WHERE session_id = ? AND seq = ?`, sessionID, seq).
		Scan(&r.joins, &r.payload, &r.encoding); err != nil {
		t.Fatal(err)
	}
	return r
}

// Events are stored compressed when that saves, read back byte for byte,
// with "no joins" and "no joins listed" kept apart.
func TestEventsAreStoredCompressedAndReadBackExactly(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	entry := typicalEntry
	big := `{"text":"` + strings.Repeat("x", eventCompressMax) + `"}`
	ps := []core.Proposal{
		{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion, Payload: []byte(`{"sessionId":"s1"}`)},
		{ObservedAtMs: 2, Kind: core.KindContextEntriesApplied, Version: core.EventVersion, Payload: []byte(entry),
			Joins: []string{"run:run_418c4c98ecb6f614", "turn:run_418c4c98ecb6f614/1"}},
		{ObservedAtMs: 3, Kind: "test.note", Version: core.EventVersion, Payload: []byte(entry), Joins: []string{}},
		{ObservedAtMs: 4, Kind: "test.note", Version: core.EventVersion, Payload: []byte("{\"a\":\n\"line\\nbreak\"}\n")},
		{ObservedAtMs: 5, Kind: "test.note", Version: core.EventVersion, Payload: []byte(big), Joins: []string{"run:r"}},
	}
	if _, err := s.Append(ctx, "s1", 0, ps); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadAfter(ctx, "s1", 0, 0)
	if err != nil || len(got) != len(ps) {
		t.Fatalf("ReadAfter = %d events, %v", len(got), err)
	}
	for i, p := range ps {
		ev := got[i]
		if !bytes.Equal(ev.Payload, p.Payload) || !reflect.DeepEqual(ev.Joins, p.Joins) || ev.Kind != p.Kind || ev.ObservedAtMs != p.ObservedAtMs {
			t.Fatalf("event %d read back as kind %s joins %#v payload %.80q; want kind %s joins %#v payload %.80q",
				i+1, ev.Kind, ev.Joins, ev.Payload, p.Kind, p.Joins, p.Payload)
		}
	}
	// The first four are one group; the fifth is past every bound.
	head := readEventRow(t, s, "s1", 1)
	if head.encoding.String != eventEncodingGroup || head.joins.Valid || len(head.payload) >= len(entry) {
		t.Fatalf("the first event of four is stored as %d bytes with encoding %q (joins column %v); want a zg1 frame under the %d bytes of one",
			len(head.payload), head.encoding.String, head.joins, len(entry))
	}
	for seq := int64(2); seq <= 4; seq++ {
		if r := readEventRow(t, s, "s1", seq); r.encoding.String != eventEncodingMember || r.joins.Valid || !bytes.Equal(r.payload, []byte{byte(seq - 1)}) {
			t.Fatalf("event %d is stored as %q with encoding %q; want the distance to its group head, zg1m", seq, r.payload, r.encoding.String)
		}
	}
	if r := readEventRow(t, s, "s1", 5); r.encoding.Valid || !bytes.Equal(r.payload, []byte(big)) || r.joins.String != `["run:r"]` {
		t.Fatalf("an event past the compression bound is stored with encoding %q; want it as it is", r.encoding.String)
	}
	// An append of one event compresses it on its own.
	if _, err := s.Append(ctx, "s1", 5, ps[1:2]); err != nil {
		t.Fatal(err)
	}
	r := readEventRow(t, s, "s1", 6)
	if r.encoding.String != eventEncodingZD1 || r.joins.Valid || len(r.payload) >= len(entry)/2 {
		t.Fatalf("a typical event appended alone is stored as %d bytes with encoding %q (joins column %v); want a zd1 frame under half its %d bytes",
			len(r.payload), r.encoding.String, r.joins, len(entry))
	}
	if got, err := s.ReadAfter(ctx, "s1", 5, 0); err != nil || len(got) != 1 || string(got[0].Payload) != entry || !reflect.DeepEqual(got[0].Joins, ps[1].Joins) {
		t.Fatalf("ReadAfter(5) = %+v, %v", got, err)
	}
}

// A row whose frame is damaged anywhere, or whose encoding is unknown,
// fails the read with an error naming the event; it never returns other
// bytes (the frame carries a checksum: nothing else verifies an event).
func TestDamagedEventRowsFailTheirRead(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	if _, err := s.Append(ctx, "s1", 0, []core.Proposal{
		{ObservedAtMs: 1, Kind: core.KindSessionOpened, Version: core.EventVersion, Payload: []byte(`{"sessionId":"s1"}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s1", 1, []core.Proposal{
		{ObservedAtMs: 2, Kind: core.KindContextEntriesApplied, Version: core.EventVersion, Payload: []byte(typicalEntry),
			Joins: []string{"run:run_418c4c98ecb6f614", "turn:run_418c4c98ecb6f614/1"}},
	}); err != nil {
		t.Fatal(err)
	}
	r := readEventRow(t, s, "s1", 2)
	if r.encoding.String != eventEncodingZD1 {
		t.Fatalf("the event is stored with encoding %q, want %q", r.encoding.String, eventEncodingZD1)
	}
	frame := r.payload
	// damage stores payload under encoding and reads: the read fails naming
	// the event, or (a flip in a header field that does not matter)
	// returns the event exactly.
	damage := func(name, encoding string, payload []byte) {
		t.Helper()
		if _, err := s.writes.ExecContext(ctx, `UPDATE events SET payload = ?, encoding = ? WHERE seq = 2`, payload, encoding); err != nil {
			t.Fatal(err)
		}
		evs, err := s.ReadAfter(ctx, "s1", 0, 0)
		if err == nil && (len(evs) != 2 || string(evs[1].Payload) != typicalEntry) {
			t.Fatalf("%s: ReadAfter returned other bytes: %q", name, evs[1].Payload)
		}
		if err != nil && !strings.Contains(err.Error(), "seq 2") {
			t.Fatalf("%s: ReadAfter = %v; want an error naming seq 2", name, err)
		}
	}
	for i := range frame {
		flipped := bytes.Clone(frame)
		flipped[i] ^= 0x01
		damage(fmt.Sprintf("byte %d of %d flipped", i, len(frame)), eventEncodingZD1, flipped)
	}
	for name, enc := range map[string]string{"truncated frame": eventEncodingZD1, "unknown encoding": "zd9"} {
		payload := frame
		if enc == eventEncodingZD1 {
			payload = frame[:len(frame)/2]
		}
		if _, err := s.writes.ExecContext(ctx, `UPDATE events SET payload = ?, encoding = ? WHERE seq = 2`, payload, enc); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadAfter(ctx, "s1", 0, 0); err == nil || !strings.Contains(err.Error(), "seq 2") {
			t.Fatalf("%s: ReadAfter = %v; want an error naming seq 2", name, err)
		}
	}
}

// TestVersion8DatabaseGainsEventEncoding reopens a database as the release
// before event compression left it: its events read as they were, and new
// ones are compressed.
func TestVersion8DatabaseGainsEventEncoding(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE events DROP COLUMN encoding`, `DELETE FROM schema_migrations WHERE version >= 9`} {
		if _, err := s.writes.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old := `{"sessionId":"s1","config":{"model":{"providerId":"openai","apiKind":"chat_completions","model":"m"}}}`
	if _, err := s.writes.ExecContext(ctx, `INSERT INTO sessions (universe, session_id, head, status, has_unfinished, created_at_ms, updated_at_ms, lifecycle)
		VALUES ('default', 's1', 1, 'idle', 0, 1, 1, '{"sessionId":"s1","head":1,"status":"idle"}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writes.ExecContext(ctx, `INSERT INTO events (universe, session_id, seq, observed_at_ms, kind, version, joins, payload)
		VALUES ('default', 's1', 1, 1, ?, 1, '["run:r"]', ?)`, core.KindSessionOpened, []byte(old)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	evs, err := s.ReadAfter(ctx, "s1", 0, 0)
	if err != nil || len(evs) != 1 || string(evs[0].Payload) != old || !reflect.DeepEqual(evs[0].Joins, []string{"run:r"}) {
		t.Fatalf("reading an event stored before compression: %v, %+v", err, evs)
	}
	if _, err := s.Append(ctx, "s1", 1, []core.Proposal{{ObservedAtMs: 2, Kind: "test.note", Version: core.EventVersion,
		Payload: []byte(old), Joins: []string{"run:r"}}}); err != nil {
		t.Fatal(err)
	}
	if r := readEventRow(t, s, "s1", 2); r.encoding.String != eventEncodingZD1 {
		t.Fatalf("an event appended after the upgrade has encoding %q, want %q", r.encoding.String, eventEncodingZD1)
	}
}
