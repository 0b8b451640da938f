package temporal

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-agents/cairn/core"
)

// flight is one activity the workflow waits for, and how to cancel it.
type flight struct {
	core.Work
	cancel workflow.CancelFunc
}

// flights is the work in flight, by key and in dispatch order. Workflow code
// never ranges over a map: the order changes from one range to the next, so
// a replay on another worker would issue its commands (activity
// cancellations) in another order than history holds, and fail as
// nondeterministic. Whatever walks the flights walks order.
type flights struct {
	byKey map[string]flight
	order []string
}

func newFlights() *flights { return &flights{byKey: map[string]flight{}} }

func (f *flights) len() int { return len(f.order) }

func (f *flights) has(key string) bool {
	_, ok := f.byKey[key]
	return ok
}

func (f *flights) add(key string, fl flight) {
	if !f.has(key) {
		f.order = append(f.order, key)
	}
	f.byKey[key] = fl
}

// remove drops a flight and reports whether it was there.
func (f *flights) remove(key string) bool {
	if !f.has(key) {
		return false
	}
	delete(f.byKey, key)
	f.order = slices.DeleteFunc(f.order, func(k string) bool { return k == key })
	return true
}

// cancelUnless cancels and drops, in dispatch order, the flights keep
// rejects.
func (f *flights) cancelUnless(keep func(core.Work) bool) {
	for _, key := range slices.Clone(f.order) {
		if fl := f.byKey[key]; !keep(fl.Work) {
			fl.cancel()
			f.remove(key)
		}
	}
}
