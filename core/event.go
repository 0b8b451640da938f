package core

import (
	"encoding/json"
)

// Event is one record of a session's history: what happened. Payloads are
// JSON; every blob reference inside them is the exact string "sha256:<hex>"
// so stores find refs without knowing the format.
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
}

// Committed turns a proposal into the event stored at seq.
func (p Proposal) Committed(seq int64) Event {
	return Event{Seq: seq, ObservedAtMs: p.ObservedAtMs, Joins: p.Joins, Kind: p.Kind, Version: p.Version, Payload: p.Payload}
}
