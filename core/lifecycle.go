package core

import (
	"encoding/json"
	"strings"
)

// Lifecycle is the session catalog's projection of a session's log, kept by
// every store in the same transaction as the append that changes it.
type Lifecycle struct {
	SessionID     string         `json:"sessionId"`
	Parent        *ParentRef     `json:"parent,omitempty"` // a sub-agent's session
	Status        string         `json:"status"`           // open | closed
	Model         ModelSelection `json:"model"`
	CreatedAtMs   int64          `json:"createdAtMs"`
	UpdatedAtMs   int64          `json:"updatedAtMs"`
	Head          int64          `json:"head"`
	ActiveRunID   string         `json:"activeRunId,omitempty"`
	QueuedRuns    int            `json:"queuedRuns"`
	LastRunID     string         `json:"lastRunId,omitempty"`
	LastRunStatus string         `json:"lastRunStatus,omitempty"`
	// CompactionPending is set between a compaction request and its end.
	CompactionPending bool `json:"compactionPending,omitempty"`
	// Title is the start of the first run's first input, for lists.
	Title string `json:"title,omitempty"`
	// ForkOf is the session and seq a history fork was made from (zero
	// for any other session).
	ForkOf ForkPoint `json:"forkOf,omitzero"`
}

// ForkPoint names where a history fork starts: its source and the seq.
type ForkPoint struct {
	SessionID string `json:"sessionId"`
	AtSeq     int64  `json:"atSeq"`
}

// titleRunes bounds a session's title.
const titleRunes = 80

// titleOf is the title an input gives: its first preview, on one line, cut
// at titleRunes.
func titleOf(input []InputItem) string {
	for _, it := range input {
		if it.Preview == "" {
			continue
		}
		t := []rune(strings.Join(strings.Fields(it.Preview), " "))
		if len(t) > titleRunes {
			return string(t[:titleRunes-1]) + "…"
		}
		return string(t)
	}
	return ""
}

// Session statuses.
const (
	SessionStatusOpen   = "open"
	SessionStatusClosed = "closed"
)

// Unfinished reports whether the session has work that still needs a host:
// a run, or a standalone compaction that was requested and has not ended.
func (l Lifecycle) Unfinished() bool {
	return l.ActiveRunID != "" || l.QueuedRuns > 0 || l.CompactionPending
}

// ProjectLifecycle folds one committed event into the projection. Events it
// does not know leave the projection unchanged apart from head and time.
func ProjectLifecycle(l Lifecycle, ev Event) Lifecycle {
	l.Head = ev.Seq
	l.UpdatedAtMs = ev.ObservedAtMs
	switch ev.Kind {
	case KindSessionOpened:
		var p SessionOpened
		if json.Unmarshal(ev.Payload, &p) == nil {
			l.SessionID, l.Parent = p.SessionID, p.Parent
			l.Model = p.Config.Model
			l.Status = SessionStatusOpen
			l.CreatedAtMs = ev.ObservedAtMs
		}
	case KindSessionConfigChanged:
		var p SessionConfigChanged
		if json.Unmarshal(ev.Payload, &p) == nil {
			l.Model = p.Config.Model
		}
	case KindSessionClosed:
		l.Status = SessionStatusClosed
	case KindCompactionRequested:
		l.CompactionPending = true
	case KindCompactionCompleted, KindCompactionFailed:
		l.CompactionPending = false
	case KindRunAccepted:
		var p RunAccepted
		if json.Unmarshal(ev.Payload, &p) == nil {
			l.LastRunID = p.RunID
			if l.Title == "" {
				l.Title = titleOf(p.Input)
			}
			if p.Queued {
				l.QueuedRuns++
				l.LastRunStatus = StatusQueued
			} else {
				l.ActiveRunID = p.RunID
				l.LastRunStatus = StatusRunning
			}
		}
	case KindRunStarted:
		var p RunStarted
		if json.Unmarshal(ev.Payload, &p) == nil && p.RunID != l.ActiveRunID {
			l.ActiveRunID = p.RunID
			if l.QueuedRuns > 0 {
				l.QueuedRuns--
			}
			if p.RunID == l.LastRunID {
				l.LastRunStatus = StatusRunning // it was "queued"
			}
		}
	case KindRunCompleted, KindRunFailed, KindRunCancelled:
		var p RunStarted // every terminal payload starts with runId
		if json.Unmarshal(ev.Payload, &p) == nil {
			status := map[string]string{KindRunCompleted: StatusCompleted, KindRunFailed: StatusFailed, KindRunCancelled: StatusCancelled}[ev.Kind]
			if p.RunID == l.ActiveRunID {
				l.ActiveRunID = ""
			} else if l.QueuedRuns > 0 {
				l.QueuedRuns-- // a queued run cancelled before it started
			}
			if p.RunID == l.LastRunID {
				l.LastRunStatus = status
			}
		}
	}
	return l
}
