package core

import "unicode/utf8"

// SessionWarning is the payload of KindSessionWarning: what it is about
// ("mcp:SERVER") and what happened, in words for a person.
type SessionWarning struct {
	Source  string `json:"source"`
	Message string `json:"message"`
}

// NoteWarning records a warning in an open session.
type NoteWarning struct {
	AtMs    int64
	Source  string
	Message string
}

func (NoteWarning) command() {}

// MaxWarningBytes bounds a warning's message.
const MaxWarningBytes = 1024

func admitNoteWarning(s *State, c NoteWarning) (Admission, error) {
	switch {
	case s.Closed:
		return Admission{}, reject(RejectSessionClosed, "session %s is closed", s.SessionID)
	case c.Source == "" || c.Message == "":
		return Admission{}, reject(RejectInvalidInput, "a warning has a source and a message")
	case len(c.Message) > MaxWarningBytes || !utf8.ValidString(c.Message) || !utf8.ValidString(c.Source):
		return Admission{}, reject(RejectInvalidInput, "a warning's message is UTF-8 text of at most %d bytes", MaxWarningBytes)
	}
	b := s.newBatch(c.AtMs)
	b.add(KindSessionWarning, nil, SessionWarning{Source: c.Source, Message: c.Message})
	return Admission{Proposals: b.props}, nil
}
