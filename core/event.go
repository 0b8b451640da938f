package core

import (
	"encoding/json"

	"github.com/cairn-agents/cairn/content"
)

// Event is one record of a session's history: what happened. Payloads are
// JSON. The blobs an event refers to are those of its payload's typed ref
// fields (see EventRefs), never strings that merely look like a digest.
type Event struct {
	Seq          int64           `json:"seq"`
	ObservedAtMs int64           `json:"observedAtMs"`
	Joins        []string        `json:"joins,omitempty"`
	Kind         string          `json:"kind"`
	Version      int             `json:"version"`
	Payload      json.RawMessage `json:"payload"`
}

// Proposal is an event the core wants appended; the store assigns its seq.
type Proposal struct {
	ObservedAtMs int64
	// Joins names the run, turn and tool call the event belongs to
	// ("run:R", "turn:R/2", "call:ID"), so views can select without decoding.
	Joins   []string
	Kind    string
	Version int
	Payload json.RawMessage
	// Refs are the blobs the payload refers to through its typed fields,
	// sorted: they must exist, and become the session's roots.
	Refs []content.Digest
}

// NewProposal encodes a payload of the current version and declares its refs.
func NewProposal(at int64, joins []string, kind string, payload any) Proposal {
	raw, err := json.Marshal(payload)
	if err != nil {
		// Payloads are core structs of strings, numbers and refs: they always encode.
		panic("core: encoding " + kind + ": " + err.Error())
	}
	return Proposal{ObservedAtMs: at, Joins: joins, Kind: kind, Version: EventVersion, Payload: raw, Refs: content.RefsOf(payload)}
}

// Committed turns a proposal into the event stored at seq.
func (p Proposal) Committed(seq int64) Event {
	return Event{Seq: seq, ObservedAtMs: p.ObservedAtMs, Joins: p.Joins, Kind: p.Kind, Version: p.Version, Payload: p.Payload}
}
