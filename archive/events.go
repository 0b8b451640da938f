package archive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cairn-agents/cairn/core"
)

// eventHeader is an event line without its payload, which follows as the
// exact stored bytes: encoding/json would compact and re-escape it.
type eventHeader struct {
	Seq          int64    `json:"seq"`
	ObservedAtMs int64    `json:"observedAtMs"`
	Joins        []string `json:"joins,omitempty"`
	Kind         string   `json:"kind"`
	Version      int      `json:"version"`
}

// appendEventLine appends ev as one JSON line.
func appendEventLine(buf *bytes.Buffer, ev core.Event) error {
	if !json.Valid(ev.Payload) {
		return fmt.Errorf("event %d (%s): payload is not valid JSON", ev.Seq, ev.Kind)
	}
	head, err := json.Marshal(eventHeader{Seq: ev.Seq, ObservedAtMs: ev.ObservedAtMs, Joins: ev.Joins, Kind: ev.Kind, Version: ev.Version})
	if err != nil {
		return err
	}
	buf.Write(head[:len(head)-1])
	buf.WriteString(`,"payload":`)
	buf.Write(ev.Payload)
	buf.WriteString("}\n")
	return nil
}

// decodeEvents decodes an events entry: JSON lines, each one event. The
// payload keeps its bytes exactly (json.RawMessage copies them verbatim).
func decodeEvents(entry string, data []byte) ([]core.Event, error) {
	var out []core.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxEventBytes)
	for sc.Scan() {
		var ev core.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, invalid(entry, fmt.Sprintf("line %d is not an event: %v", len(out)+1, err))
		}
		if ev.Kind == "" || len(ev.Payload) == 0 {
			return nil, invalid(entry, fmt.Sprintf("line %d has no kind or payload", len(out)+1))
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, invalid(entry, fmt.Sprintf("after %d events: %v", len(out), err))
	}
	if len(out) == 0 {
		return nil, invalid(entry, "holds no event")
	}
	return out, nil
}

// DecodeEvents decodes the bytes of an events entry (Entry.Data) again,
// for a reader that kept them aside.
func DecodeEvents(entry string, data []byte) ([]core.Event, error) { return decodeEvents(entry, data) }
