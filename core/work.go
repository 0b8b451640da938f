package core

import "strconv"

// Work names one piece of work a host has in flight: a generation (RunID,
// Turn), a tool call (RunID, Turn, CallID), a standalone compaction
// (CompactionID) or the transcription of a run's audio (RunID,
// Transcription). Both hosts key their in-flight maps by it and cancel what
// the state no longer awaits.
type Work struct {
	RunID         string
	Turn          int
	CallID        string
	CompactionID  string
	Transcription bool
}

// Key identifies the work within a session.
func (w Work) Key() string {
	switch {
	case w.CompactionID != "":
		return "compact/" + w.CompactionID
	case w.Transcription:
		return "transcribe/" + w.RunID
	}
	return w.RunID + "/" + strconv.Itoa(w.Turn) + "/" + w.CallID
}

// Awaits reports whether the state still waits for the work's result. Work
// it no longer awaits (a cancelled run, a finished compaction) would be
// rejected as stale, so a host cancels it.
func (s *State) Awaits(w Work) bool {
	if w.CompactionID != "" {
		return s.Compaction != nil && s.Compaction.ID == w.CompactionID
	}
	r := s.ActiveRun()
	if r == nil || r.ID != w.RunID {
		return false
	}
	if w.Transcription {
		return r.AwaitingTranscription()
	}
	if r.Turn == nil || r.Turn.N != w.Turn || r.Turn.Completed {
		return false
	}
	if w.CallID == "" {
		return r.Turn.GenRequested && !r.Turn.GenCompleted
	}
	for _, c := range s.OpenCalls() {
		if c.CallID == w.CallID {
			return true
		}
	}
	return false
}
