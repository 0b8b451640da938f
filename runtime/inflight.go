package runtime

import (
	"slices"

	"github.com/cairn-agents/cairn/core"
)

// Flight is one piece of work a host started and whose result it has not
// admitted yet.
type Flight struct {
	core.Work
	// Cancel stops the work; its result, if it still comes, is dropped.
	Cancel func()
	// Admissions counts failed attempts to admit its result, for a host
	// that admits a result again before it gives up (MaxResultAdmissions).
	Admissions int
}

// InFlight is a session's work in flight, by Work.Key, in the order it was
// started: work is in flight at most once, since the core asks for the same
// work until its result commits. Whatever walks the flights walks that
// order, never a map's: the order of a map changes from one range to the
// next, so workflow code that cancelled in map order would issue its
// cancellations in another order on replay than history holds, and fail
// as nondeterministic.
type InFlight struct {
	byKey map[string]*Flight
	order []string
}

// NewInFlight returns an empty set of flights.
func NewInFlight() *InFlight { return &InFlight{byKey: map[string]*Flight{}} }

// Len is the number of flights.
func (f *InFlight) Len() int { return len(f.order) }

// Get returns the flight of a work key, or nil.
func (f *InFlight) Get(key string) *Flight { return f.byKey[key] }

// Add records work as in flight, cancelled by cancel. A host checks Get
// first and starts work that is not in flight only.
func (f *InFlight) Add(work core.Work, cancel func()) {
	key := work.Key()
	if f.byKey[key] == nil {
		f.order = append(f.order, key)
	}
	f.byKey[key] = &Flight{Work: work, Cancel: cancel}
}

// Remove drops a flight and reports whether it was there.
func (f *InFlight) Remove(key string) bool {
	if f.byKey[key] == nil {
		return false
	}
	delete(f.byKey, key)
	f.order = slices.DeleteFunc(f.order, func(k string) bool { return k == key })
	return true
}

// CancelStale cancels and drops, in start order, the work st no longer
// awaits (State.Awaits: a cancelled run, a finished compaction), whose
// result would be rejected as stale anyway. A host calls it after each
// commit.
func (f *InFlight) CancelStale(st *core.State) {
	for _, key := range slices.Clone(f.order) {
		if fl := f.byKey[key]; !st.Awaits(fl.Work) {
			fl.Cancel()
			f.Remove(key)
		}
	}
}
