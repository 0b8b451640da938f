package core

import (
	"strconv"
)

// batch builds the proposals of one admission or planning step. It tracks the
// context revision and entry counter the proposals will reach when applied in
// order, without touching the state itself.
type batch struct {
	s         *State
	at        int64
	rev       int64
	nextEntry int64
	props     []Proposal
	catalogs  map[string]string   // catalog key -> id of the version this batch proposed last
	done      map[string]doneCall // call id -> completed by this batch (see completeCall)
}

func (s *State) newBatch(at int64) *batch {
	return &batch{s: s, at: at, rev: s.Revision, nextEntry: s.nextEntry}
}

// currentCatalog is the id of the catalog version a new one with key
// supersedes: the latest proposed in this batch, else the active one.
func (b *batch) currentCatalog(key string) string {
	if id, ok := b.catalogs[key]; ok {
		return id
	}
	if e, ok := b.s.EntryByKey(key); ok && e.Kind == EntryCatalog {
		return e.ID
	}
	return ""
}

func (b *batch) add(kind string, joins []string, payload any) {
	b.props = append(b.props, NewProposal(b.at, joins, kind, payload))
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
			ProvenanceRef: in.ProvenanceRef, CallID: in.CallID, ToolName: in.ToolName, RunID: runID, Scope: in.Scope,
		}
		if in.Kind == EntryCatalog && in.Key != "" {
			// A changed catalog goes to the tail and names the version it
			// replaces, which stays in place: the request prefix is kept.
			out[i].Supersedes = b.currentCatalog(in.Key)
			if b.catalogs == nil {
				b.catalogs = map[string]string{}
			}
			b.catalogs[in.Key] = out[i].ID
		}
	}
	b.add(KindContextEntriesApplied, joins, ContextEntriesApplied{BaseRevision: b.rev, Entries: out})
	b.rev++
	return out
}

// endRun proposes the end of a run, first removing the entries that expire
// with it.
func (b *batch) endRun(runID, kind string, payload any) {
	var expired []string
	for i, left := 0, b.s.runScoped; left > 0; i++ { // most runs leave none
		if e := &b.s.entries[i]; e.Scope == ScopeRun {
			left--
			if e.RunID == runID {
				expired = append(expired, e.ID)
			}
		}
	}
	if len(expired) > 0 {
		b.add(KindContextEntriesRemoved, runJoins(runID), ContextEntriesRemoved{BaseRevision: b.rev, EntryIDs: expired})
		b.rev++
	}
	b.add(kind, runJoins(runID), payload)
}

func runJoins(runID string) []string { return []string{"run:" + runID} }

func turnJoins(runID string, turn int) []string {
	return []string{"run:" + runID, "turn:" + runID + "/" + strconv.Itoa(turn)}
}

func callJoins(runID string, turn int, callID string) []string {
	return append(turnJoins(runID, turn), "call:"+callID)
}
