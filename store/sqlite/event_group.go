package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-agents/cairn/core"
)

// The events of one append are stored compressed together, as a group: a
// turn appends a few short events at a time, and one frame for all of them
// costs one dictionary reset instead of one each (the reset, a copy of the
// encoder's tables, was most of an event's cost) and finds the ids and
// keys the events repeat among themselves. The group's first row (its
// head) holds the frame, encoding "zg1"; each later row (a member) holds
// the distance back to its head as a uvarint, encoding "zg1m". The frame
// decodes to the number of records, each record's length (uvarints), then
// the records, each as "zd1" compresses one: the joins JSON, a newline,
// the payload. A group is bounded (eventGroupMax events, eventGroupBytes
// of records), so reading one event decodes at most that much.
const (
	eventEncodingGroup  = "zg1"
	eventEncodingMember = "zg1m"
	eventGroupMax       = 64
	eventGroupBytes     = 64 << 10
)

// eventColumns are the joins, payload and encoding columns of one events
// row; joins and encoding are nil for NULL.
type eventColumns struct {
	joins    any
	payload  []byte
	encoding any
}

// encodeEventRows returns the columns of consecutive events, given each
// one's joins JSON (nil: NULL) and payload: in groups where a group saves
// an eighth or more, else each on its own (encodeEvent).
func encodeEventRows(joins, payloads [][]byte) []eventColumns {
	out := make([]eventColumns, len(payloads))
	for start := 0; start < len(payloads); {
		end, size := start, 0
		for end < len(payloads) && end-start < eventGroupMax {
			n := recordLen(joins[end], payloads[end])
			if size+n > eventGroupBytes {
				break
			}
			size += n
			end++
		}
		if end-start < 2 || !encodeGroup(out[start:end], joins[start:end], payloads[start:end], size) {
			end = max(end, start+1)
			for i := start; i < end; i++ {
				out[i] = encodeEvent(joins[i], payloads[i])
			}
		}
		start = end
	}
	return out
}

// encodeGroup fills out with the rows of one group of records totalling
// size bytes, and reports whether the group saved an eighth or more.
func encodeGroup(out []eventColumns, joins, payloads [][]byte, size int) bool {
	rec := binary.AppendUvarint(make([]byte, 0, size+3*len(payloads)), uint64(len(payloads)))
	for i := range payloads {
		rec = binary.AppendUvarint(rec, uint64(recordLen(joins[i], payloads[i])))
	}
	for i := range payloads {
		rec = appendRecord(rec, joins[i], payloads[i])
	}
	z := eventEncoder.EncodeAll(rec, make([]byte, 0, len(rec)/2))
	if len(z) > size-size/8 {
		return false
	}
	out[0] = eventColumns{payload: z, encoding: eventEncodingGroup}
	for i := 1; i < len(out); i++ {
		out[i] = eventColumns{payload: binary.AppendUvarint(nil, uint64(i)), encoding: eventEncodingMember}
	}
	return true
}

// memberDistance is how far back a member row's head is.
func memberDistance(payload []byte) (int64, error) {
	d, n := binary.Uvarint(payload)
	if n != len(payload) || d < 1 || d >= eventGroupMax {
		return 0, fmt.Errorf("the stored event names no group head")
	}
	return int64(d), nil
}

// decodeGroup returns the records of a group head's frame.
func decodeGroup(frame []byte) ([][]byte, error) {
	rec, err := eventDecoder.DecodeAll(frame, nil)
	if err != nil {
		return nil, fmt.Errorf("the stored event group does not decompress: %w", err)
	}
	count, k := binary.Uvarint(rec)
	if k <= 0 || count < 2 || count > eventGroupMax {
		return nil, fmt.Errorf("the stored event group has no valid count")
	}
	rec = rec[k:]
	lens := make([]uint64, count)
	var total uint64
	for i := range lens {
		n, k := binary.Uvarint(rec)
		if k <= 0 {
			return nil, fmt.Errorf("the stored event group has no valid lengths")
		}
		lens[i], total, rec = n, total+n, rec[k:]
	}
	if total != uint64(len(rec)) {
		return nil, fmt.Errorf("the stored event group's lengths do not add up")
	}
	records := make([][]byte, count)
	for i, n := range lens {
		records[i], rec = rec[:n:n], rec[n:]
	}
	return records, nil
}

// storedEvent is an events row as read, its event not yet decoded.
type storedEvent struct {
	ev       core.Event
	joins    []byte // nil for NULL
	payload  []byte
	encoding string
}

// groupReader decodes the rows of one read, each group once: a member
// whose head the read did not include reads the head's row too.
type groupReader struct {
	ctx    context.Context
	s      *Store
	owner  string
	stored []storedEvent
	groups map[int64][][]byte // by head seq
}

// event decodes the i-th row read.
func (g *groupReader) event(i int) (core.Event, error) {
	r := g.stored[i]
	ev := r.ev
	var joins, payload []byte
	var err error
	switch r.encoding {
	case eventEncodingGroup, eventEncodingMember:
		var d int64
		if r.encoding == eventEncodingMember {
			if d, err = memberDistance(r.payload); err != nil {
				return ev, err
			}
		}
		var records [][]byte
		if records, err = g.group(i, r.ev.Seq-d); err != nil {
			return ev, err
		}
		if d >= int64(len(records)) {
			return ev, fmt.Errorf("the stored event's group at seq %d holds no event %d", r.ev.Seq-d, d)
		}
		joins, payload, err = splitRecord(records[d])
	default:
		joins, payload, err = decodeEvent(r.joins, r.joins != nil, r.payload, r.encoding)
	}
	if err != nil {
		return ev, err
	}
	if joins != nil {
		if err := json.Unmarshal(joins, &ev.Joins); err != nil {
			return ev, fmt.Errorf("decode joins: %w", err)
		}
	}
	ev.Payload = payload
	return ev, nil
}

// group returns the records of the group whose head is at seq head, for
// the i-th row read (the head itself, or one of its members).
func (g *groupReader) group(i int, head int64) ([][]byte, error) {
	if records, ok := g.groups[head]; ok {
		return records, nil
	}
	frame, encoding, found := g.stored[i].payload, g.stored[i].encoding, true
	if head != g.stored[i].ev.Seq {
		found = false
		// A read's rows have consecutive seqs, ascending or descending:
		// the head, if read, is as many rows before or after.
		for _, j := range []int{i - int(g.stored[i].ev.Seq-head), i + int(g.stored[i].ev.Seq-head)} {
			if j >= 0 && j < len(g.stored) && g.stored[j].ev.Seq == head {
				frame, encoding, found = g.stored[j].payload, g.stored[j].encoding, true
			}
		}
	}
	if !found {
		var enc sql.NullString
		err := g.s.reads.QueryRowContext(g.ctx, `SELECT payload, encoding FROM events WHERE universe = ? AND session_id = ? AND seq = ?`,
			g.s.universe, g.owner, head).Scan(&frame, &enc)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("the stored event's group head, seq %d, is missing", head)
		}
		if err != nil {
			return nil, fmt.Errorf("read the group head at seq %d: %w", head, err)
		}
		encoding = enc.String
	}
	if encoding != eventEncodingGroup {
		return nil, fmt.Errorf("the stored event's group head, seq %d, is not one", head)
	}
	records, err := decodeGroup(frame)
	if err != nil {
		return nil, fmt.Errorf("group at seq %d: %w", head, err)
	}
	if g.groups == nil {
		g.groups = map[int64][][]byte{}
	}
	g.groups[head] = records
	return records, nil
}
