package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

// groupProposals are n events as a turn appends them, each different.
func groupProposals(n int) []core.Proposal {
	ps := make([]core.Proposal, n)
	for i := range ps {
		ps[i] = core.Proposal{ObservedAtMs: int64(i + 1), Kind: core.KindContextEntriesApplied, Version: core.EventVersion,
			Payload: []byte(strings.Replace(typicalEntry, `"e8"`, fmt.Sprintf(`"e%d"`, i), 1)),
			Joins:   []string{"run:run_418c4c98ecb6f614", fmt.Sprintf("turn:run_418c4c98ecb6f614/%d", i)}}
		switch i % 4 {
		case 1:
			ps[i].Joins = nil
		case 2:
			ps[i].Joins = []string{}
		}
	}
	return ps
}

// sameEvents fails t unless got are the events want proposed, from seq
// first on.
func sameEvents(t *testing.T, what string, got []core.Event, want []core.Proposal, first int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i, p := range want {
		ev := got[i]
		if ev.Seq != first+int64(i) || ev.Kind != p.Kind || ev.ObservedAtMs != p.ObservedAtMs || !bytes.Equal(ev.Payload, p.Payload) || !reflect.DeepEqual(ev.Joins, p.Joins) {
			t.Fatalf("%s: event %d is seq %d joins %#v payload %.60q; want seq %d joins %#v payload %.60q",
				what, i, ev.Seq, ev.Joins, ev.Payload, first+int64(i), p.Joins, p.Payload)
		}
	}
}

// Every read, from any seq, in either direction, with any limit, returns
// the events of a group exactly: a read that starts inside a group, or
// reads newest first, still finds the group's head.
func TestEventGroupsReadFromAnyStart(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	all := groupProposals(16)
	for _, batch := range [][2]int{{0, 1}, {1, 13}, {13, 16}} {
		if _, err := s.Append(ctx, "s1", int64(batch[0]), all[batch[0]:batch[1]]); err != nil {
			t.Fatal(err)
		}
	}
	var heads []int64
	for seq := int64(1); seq <= 16; seq++ {
		if readEventRow(t, s, "s1", seq).encoding.String == eventEncodingGroup {
			heads = append(heads, seq)
		}
	}
	if !reflect.DeepEqual(heads, []int64{2, 14}) {
		t.Fatalf("group heads at seqs %v, want [2 14] (one group per append of more than one event)", heads)
	}
	for _, limit := range []int{0, 1, 2, 5} {
		for after := int64(0); after <= 16; after++ {
			got, err := s.ReadAfter(ctx, "s1", after, limit)
			if err != nil {
				t.Fatalf("ReadAfter(%d, %d): %v", after, limit, err)
			}
			want := all[after:]
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			sameEvents(t, fmt.Sprintf("ReadAfter(%d, %d)", after, limit), got, want, after+1)
		}
		for before := int64(1); before <= 17; before++ {
			got, err := s.ReadBefore(ctx, "s1", before, limit)
			if err != nil {
				t.Fatalf("ReadBefore(%d, %d): %v", before, limit, err)
			}
			want := all[:before-1]
			if limit > 0 && len(want) > limit {
				want = want[len(want)-limit:]
			}
			sameEvents(t, fmt.Sprintf("ReadBefore(%d, %d)", before, limit), got, want, before-int64(len(want)))
		}
	}
}

// A group holds at most eventGroupMax events and eventGroupBytes of
// records: a larger event is stored on its own, and the events around it
// form groups of their own.
func TestEventGroupsAreBounded(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ps := groupProposals(2*eventGroupMax + 10)
	big := core.Proposal{ObservedAtMs: 1, Kind: "test.note", Version: core.EventVersion,
		Payload: []byte(`{"text":"` + strings.Repeat("x", eventGroupBytes) + `"}`)}
	ps = append(append(append(ps[:0:0], ps[:3]...), big), ps[3:]...)
	if _, err := s.Append(ctx, "s1", 0, ps); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadAfter(ctx, "s1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, "ReadAfter(0)", got, ps, 1)
	var encodings []string
	for seq := int64(1); seq <= int64(len(ps)); seq++ {
		encodings = append(encodings, readEventRow(t, s, "s1", seq).encoding.String)
	}
	want := []string{eventEncodingGroup, eventEncodingMember, eventEncodingMember, eventEncodingZD1}
	for _, n := range []int{eventGroupMax, eventGroupMax, len(ps) - 4 - 2*eventGroupMax} {
		want = append(want, eventEncodingGroup)
		for range n - 1 {
			want = append(want, eventEncodingMember)
		}
	}
	if !reflect.DeepEqual(encodings, want) {
		t.Fatalf("encodings by seq:\n%v\nwant\n%v", encodings, want)
	}
}

// A group whose frame is damaged anywhere, a member that names no head, a
// row that is not one or an event past the end of its group, and a member whose head is gone, all fail the
// read with an error naming the event; a read never returns other bytes.
func TestDamagedEventGroupsFailTheirRead(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ps := groupProposals(5)
	if _, err := s.Append(ctx, "s1", 0, ps[:3]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s1", 3, ps[3:]); err != nil {
		t.Fatal(err)
	}
	set := func(seq int64, payload []byte, encoding string) {
		t.Helper()
		if _, err := s.writes.ExecContext(ctx, `UPDATE events SET payload = ?, encoding = ? WHERE seq = ?`, payload, encoding, seq); err != nil {
			t.Fatal(err)
		}
	}
	// read reads after after: it fails naming seq, or returns the events
	// exactly (if exact is allowed).
	read := func(name string, after, seq int64, exact bool) {
		t.Helper()
		got, err := s.ReadAfter(ctx, "s1", after, 0)
		if err == nil && exact {
			sameEvents(t, name, got, ps[after:], after+1)
			return
		}
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("seq %d:", seq)) {
			t.Fatalf("%s: ReadAfter(%d) = %v; want an error naming seq %d", name, after, err, seq)
		}
	}
	frame := readEventRow(t, s, "s1", 1).payload
	for i := range frame {
		flipped := bytes.Clone(frame)
		flipped[i] ^= 0x01
		set(1, flipped, eventEncodingGroup)
		read(fmt.Sprintf("byte %d of %d flipped", i, len(frame)), 0, 1, true)
		read(fmt.Sprintf("byte %d of %d flipped, read from a member", i, len(frame)), 1, 2, true)
	}
	set(1, frame[:len(frame)/2], eventEncodingGroup)
	read("truncated frame", 1, 2, false)
	set(1, frame, eventEncodingGroup)
	read("restored", 0, 0, true)

	for name, payload := range map[string][]byte{
		"no distance": {}, "distance 0": {0}, "distance past the group bound": {eventGroupMax},
		"unfinished uvarint": {0x80}, "bytes after the distance": {1, 1}, "distance before seq 1": {2},
	} {
		set(2, payload, eventEncodingMember)
		read(name, 0, 2, false)
	}
	set(2, []byte{1}, eventEncodingMember)
	set(3, []byte{1}, eventEncodingMember) // names seq 2, a member
	read("head is a member", 0, 3, false)
	set(3, []byte{2}, eventEncodingMember)
	read("restored", 0, 0, true)
	head4 := readEventRow(t, s, "s1", 4).payload
	set(4, []byte{3}, eventEncodingMember) // seq 1's group holds 3
	read("past the end of its group", 0, 4, false)
	set(4, head4, eventEncodingGroup)
	read("restored", 0, 0, true)
	if _, err := s.writes.ExecContext(ctx, `DELETE FROM events WHERE seq = 1`); err != nil {
		t.Fatal(err)
	}
	read("head deleted", 1, 2, false)
}
