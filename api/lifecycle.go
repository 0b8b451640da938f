package api

import (
	"context"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/store"
)

// Lifecycle methods.
const (
	// MethodSessionClose closes a session: no new runs are admitted, and
	// reads keep working.
	MethodSessionClose = "session/close"
	// MethodSessionDelete deletes a closed session (with cascade, the
	// closed tree of its history forks).
	MethodSessionDelete = "session/delete"
)

// Error kinds of deletion.
const (
	// KindSessionNotClosed: only closed sessions can be deleted.
	KindSessionNotClosed = "session_not_closed"
	// KindSessionHasForks: history forks inherit the session's events; delete
	// them first, or the whole tree with cascade.
	KindSessionHasForks = "session_has_forks"
)

// SessionCloseParams close a session, with an optional reason.
type SessionCloseParams struct {
	SessionID string `json:"sessionId"`
	Reason    string `json:"reason,omitempty"`
}

// SessionCloseResult is the closed session's status.
type SessionCloseResult struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
}

// SessionDeleteParams delete a closed session; with Cascade, together with
// every history fork below it (all closed).
type SessionDeleteParams struct {
	SessionID string `json:"sessionId"`
	Cascade   bool   `json:"cascade,omitempty"`
}

// SessionDeleteResult lists the deleted sessions, the requested one first.
type SessionDeleteResult struct {
	Deleted []string `json:"deleted"`
}

// DeleteHost is implemented by hosts that delete sessions (the local host
// and the Temporal gateway), forgetting what they hold of them.
type DeleteHost interface {
	DeleteSession(ctx context.Context, sessionID string, cascade bool) ([]string, error)
}

func (s call) closeSession(ctx context.Context, p SessionCloseParams) (SessionCloseResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return SessionCloseResult{}, err
	}
	if _, err := s.host.Submit(ctx, p.SessionID, core.CloseSession{AtMs: s.host.NowMs(), Reason: p.Reason}); err != nil {
		return SessionCloseResult{}, err
	}
	return SessionCloseResult{SessionID: p.SessionID, Status: core.SessionStatusClosed}, nil
}

func (s call) deleteSession(ctx context.Context, p SessionDeleteParams) (SessionDeleteResult, error) {
	if err := requireSession(p.SessionID); err != nil {
		return SessionDeleteResult{}, err
	}
	dh, ok := s.host.(DeleteHost)
	if !ok {
		return SessionDeleteResult{}, unsupported("this server's host cannot delete sessions")
	}
	ids, err := dh.DeleteSession(ctx, p.SessionID, p.Cascade)
	if err != nil {
		return SessionDeleteResult{}, catalogError(err)
	}
	return SessionDeleteResult{Deleted: ids}, nil
}

// listSessionsPage serves session/list: newest first (by creation time,
// then id, both descending), keyset-paged with before: the cursor of the
// previous page. With after (a session id) it lists by id instead, the
// listing before paging existed.
func (s call) listSessionsPage(ctx context.Context, p SessionListParams) (SessionListResult, error) {
	if p.Limit < 0 {
		return SessionListResult{}, invalidParams("limit must not be negative")
	}
	limit := p.Limit
	if limit <= 0 || limit > maxSessionList {
		limit = maxSessionList
	}
	cat, ok := s.host.Log().(store.Catalog)
	if p.Before != "" && p.After != "" {
		return SessionListResult{}, invalidParams("before and after cannot be combined")
	}
	if p.After != "" || !ok {
		if p.Before != "" {
			return SessionListResult{}, unsupported("this server's store cannot page sessions newest first")
		}
		list, err := s.host.Log().Sessions(ctx, p.After, limit)
		if list == nil {
			list = []core.Lifecycle{}
		}
		return SessionListResult{Sessions: list}, err
	}
	var before *store.SessionCursor
	if p.Before != "" {
		c, err := store.ParseSessionCursor(p.Before)
		if err != nil {
			return SessionListResult{}, invalidParams("before: " + err.Error() + "; pass the cursor of the previous page")
		}
		before = &c
	}
	list, err := cat.SessionsBefore(ctx, before, limit+1)
	if err != nil {
		return SessionListResult{}, err
	}
	out := SessionListResult{Sessions: list}
	if len(list) > limit {
		out.Sessions = list[:limit]
		out.Cursor = store.CursorOf(list[limit-1]).String()
	}
	if out.Sessions == nil {
		out.Sessions = []core.Lifecycle{}
	}
	return out, nil
}

// CloseSession calls session/close.
func (c *Client) CloseSession(ctx context.Context, p SessionCloseParams) (SessionCloseResult, error) {
	var out SessionCloseResult
	return out, c.Call(ctx, MethodSessionClose, p, &out)
}

// DeleteSession calls session/delete.
func (c *Client) DeleteSession(ctx context.Context, p SessionDeleteParams) (SessionDeleteResult, error) {
	var out SessionDeleteResult
	return out, c.Call(ctx, MethodSessionDelete, p, &out)
}
