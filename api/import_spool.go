package api

import (
	"fmt"
	"io"
	"os"

	"github.com/cairn-agents/cairn/archive"
	"github.com/cairn-agents/cairn/core"
)

// spool keeps the checked events entries of an import in a temporary file
// until every entry has been checked, so the server's memory does not grow
// with the sessions' length; the commit reads them back a chunk at a time.
type spool struct {
	f      *os.File
	size   int64
	chunks map[int][]spooled // manifest session index → its entries, in order
}

type spooled struct {
	name      string
	off, size int64
}

func newSpool() (*spool, error) {
	f, err := os.CreateTemp("", "cairn-import-*")
	if err != nil {
		return nil, fmt.Errorf("import: a temporary file for the events: %w", err)
	}
	return &spool{f: f, chunks: map[int][]spooled{}}, nil
}

func (s *spool) add(e archive.Entry) error {
	if _, err := s.f.Write(e.Data); err != nil {
		return fmt.Errorf("import: spooling %s: %w", e.Name, err)
	}
	s.chunks[e.Session] = append(s.chunks[e.Session], spooled{name: e.Name, off: s.size, size: int64(len(e.Data))})
	s.size += int64(len(e.Data))
	return nil
}

// events yields the session's events as proposals, with the refs their
// format declares, an entry at a time.
func (s *spool) events(session int) func(yield func([]core.Proposal) error) error {
	return func(yield func([]core.Proposal) error) error {
		var buf []byte
		for _, c := range s.chunks[session] {
			if int64(cap(buf)) < c.size {
				buf = make([]byte, c.size)
			}
			data := buf[:c.size]
			if _, err := s.f.ReadAt(data, c.off); err != nil && err != io.EOF {
				return fmt.Errorf("import: reading back %s: %w", c.name, err)
			}
			evs, err := archive.DecodeEvents(c.name, data)
			if err != nil {
				return err
			}
			ps := make([]core.Proposal, len(evs))
			for i, ev := range evs {
				refs, err := core.EventRefs(ev)
				if err != nil {
					return err
				}
				ps[i] = core.Proposal{ObservedAtMs: ev.ObservedAtMs, Joins: ev.Joins, Kind: ev.Kind, Version: ev.Version, Payload: ev.Payload, Refs: refs}
			}
			if err := yield(ps); err != nil {
				return err
			}
		}
		return nil
	}
}

func (s *spool) close() {
	s.f.Close()
	os.Remove(s.f.Name())
}
