package core

import (
	"errors"
	"strconv"
)

// Drive is the contract between the pure core and a host, after etcd/raft's
// Node: the host admits commands, asks Next for one intent, performs it, and
// feeds committed events back. State changes only through Committed, with
// events the store assigned seqs to, or through Chain, which applies the
// events a store will assign and leaves the drive ahead of the log until
// the host confirms them (Appended) or rebuilds it.
type Drive struct {
	state   *State
	pending []Proposal
	// ahead: Chain applied proposals the host has not yet appended (see
	// Chain); until Appended, the drive admits nothing and plans nothing.
	ahead bool
	// fingerprints remembers the last planned request, so planning the
	// next hashes only the entries it adds (derived, never stored).
	fingerprints *FingerprintMemo
}

// ErrPendingAppend is returned when a command is admitted while proposals
// from an earlier step have not been committed or abandoned.
var ErrPendingAppend = errors.New("core: proposals pending; commit or abandon them first")

// ErrAhead is returned when a command is admitted to a drive whose chained
// append (Chain) has not been confirmed: the host must first confirm it
// (Appended) or rebuild the drive from the log.
var ErrAhead = errors.New("core: a chained append is unconfirmed; confirm it or rebuild the state from the log")

// NewDrive drives a session from its replayed state.
func NewDrive(s *State) *Drive { return &Drive{state: s} }

// State is the committed state. Callers must not modify it.
func (d *Drive) State() *State { return d.state }

// Admit decides a command; accepted proposals become the next append intent.
func (d *Drive) Admit(cmd Command) (Admission, error) {
	if d.ahead {
		return Admission{}, ErrAhead
	}
	if len(d.pending) > 0 {
		return Admission{}, ErrPendingAppend
	}
	a, err := Admit(d.state, cmd)
	if err != nil {
		return Admission{}, err
	}
	d.pending = a.Proposals
	return a, nil
}

// Next returns the one thing the host should do now. It repeats the same
// work intent until results are committed; the host tracks what is in flight.
func (d *Drive) Next(atMs int64) Intent {
	if d.ahead {
		return Intent{Kind: IntentIdle}
	}
	if len(d.pending) > 0 {
		return Intent{Kind: IntentAppend, ExpectedHead: d.state.Head, Proposals: d.pending}
	}
	in := plan(d.state, atMs, &d.fingerprints)
	if in.Kind == IntentAppend {
		d.pending = in.Proposals
	}
	return in
}

// Committed applies the events the store committed for the pending proposals.
func (d *Drive) Committed(events []Event) error {
	for _, ev := range events {
		if err := d.state.Apply(ev); err != nil {
			return err
		}
	}
	d.pending = nil
	return nil
}

// Abandon drops pending proposals whose append failed.
func (d *Drive) Abandon() { d.pending = nil }

// Chain returns the pending append intent extended with the steps the core
// then takes on its own (a turn opening after a run is accepted, a run
// completing after its last turn), up to max steps in all, so a host
// appends them in one transaction instead of one each. To plan each next
// step the drive applies the proposals before it as the events a store
// appending them after ExpectedHead commits (seqs in order, the proposals'
// own times), and returns those events. From then on the drive is ahead of
// the log: the host appends the intent and calls Appended when the store
// committed exactly those events, or else rebuilds the drive from the log.
// Until then Next plans nothing and Admit returns ErrAhead. A reducer error
// leaves the drive ahead too.
func (d *Drive) Chain(atMs int64, max int) (Intent, []Event, error) {
	if d.ahead || len(d.pending) == 0 {
		return Intent{}, nil, errors.New("core: nothing pending to chain")
	}
	in := Intent{Kind: IntentAppend, ExpectedHead: d.state.Head}
	var events []Event
	d.ahead = true
	for step := 0; len(d.pending) > 0; step++ {
		for _, p := range d.pending {
			ev := p.Committed(d.state.Head + 1)
			if err := d.state.Apply(ev); err != nil {
				d.pending = nil
				return Intent{}, nil, err
			}
			in.Proposals, events = append(in.Proposals, p), append(events, ev)
		}
		d.pending = nil
		if step+1 >= max {
			break
		}
		if next := plan(d.state, atMs, &d.fingerprints); next.Kind == IntentAppend {
			d.pending = next.Proposals
		}
	}
	return in, events, nil
}

// Appended confirms that the host appended the intent of the last Chain
// and the store committed the events Chain returned.
func (d *Drive) Appended() { d.ahead = false }

// Ahead reports whether the drive holds an unconfirmed chained append.
func (d *Drive) Ahead() bool { return d.ahead }

func itoaInt(n int) string { return strconv.Itoa(n) }
