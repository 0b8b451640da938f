package core

import (
	"errors"
	"strconv"
)

// Drive is the contract between the pure core and a host, after etcd/raft's
// Node: the host admits commands, asks Next for one intent, performs it, and
// feeds committed events back. The drive never applies its own proposals:
// state changes only through Committed, with events the store assigned seqs to.
type Drive struct {
	state   *State
	pending []Proposal
	// fingerprints remembers the last planned request, so planning the
	// next hashes only the entries it adds (derived, never stored).
	fingerprints *FingerprintMemo
}

// ErrPendingAppend is returned when a command is admitted while proposals
// from an earlier step have not been committed or abandoned.
var ErrPendingAppend = errors.New("core: proposals pending; commit or abandon them first")

// NewDrive drives a session from its replayed state.
func NewDrive(s *State) *Drive { return &Drive{state: s} }

// State is the committed state. Callers must not modify it.
func (d *Drive) State() *State { return d.state }

// Admit decides a command; accepted proposals become the next append intent.
func (d *Drive) Admit(cmd Command) (Admission, error) {
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

func itoaInt(n int) string { return strconv.Itoa(n) }
