package core

import (
	"encoding/json"
	"strconv"
)

// batch builds the proposals of one admission or planning step. It tracks the
// context revision and entry counter the proposals will reach when applied in
// order, without touching the state itself.
type batch struct {
	at        int64
	rev       int64
	nextEntry int64
	props     []Proposal
}

func (s *State) newBatch(at int64) *batch {
	return &batch{at: at, rev: s.Revision, nextEntry: s.nextEntry}
}

func (b *batch) add(kind string, joins []string, payload any) {
	raw, err := json.Marshal(payload)
	if err != nil {
		// Payloads are core structs of strings, numbers and refs: they always encode.
		panic("core: encoding " + kind + ": " + err.Error())
	}
	b.props = append(b.props, Proposal{ObservedAtMs: b.at, Joins: joins, Kind: kind, Version: EventVersion, Payload: raw})
}

// entries assigns ids to inputs and proposes them as one context change.
func (b *batch) entries(inputs []EntryInput, source, runID string, joins []string) []Entry {
	if len(inputs) == 0 {
		return nil
	}
	out := make([]Entry, len(inputs))
	for i, in := range inputs {
		b.nextEntry++
		out[i] = Entry{
			ID: EntryID(b.nextEntry), Key: in.Key, Kind: in.Kind, Role: in.Role, Source: source,
			Content: in.Content, TokenEstimate: in.TokenEstimate, Preview: in.Preview, Origin: in.Origin,
			ProvenanceRef: in.ProvenanceRef, CallID: in.CallID, ToolName: in.ToolName, RunID: runID,
		}
	}
	b.add(KindContextEntriesApplied, joins, ContextEntriesApplied{BaseRevision: b.rev, Entries: out})
	b.rev++
	return out
}

func runJoins(runID string) []string { return []string{"run:" + runID} }

func turnJoins(runID string, turn int) []string {
	return []string{"run:" + runID, "turn:" + runID + "/" + strconv.Itoa(turn)}
}

func callJoins(runID string, turn int, callID string) []string {
	return append(turnJoins(runID, turn), "call:"+callID)
}
