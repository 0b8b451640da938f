package local

import "context"

// Sweep runs one eviction sweep now and returns how many sessions it evicted.
func (h *Host) Sweep() int { return h.sweep() }

// Loaded is the number of sessions in memory (loading ones included).
func (h *Host) Loaded() int { return h.loadedCount() }

// IsLoaded reports whether the session is in memory.
func (h *Host) IsLoaded(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id] != nil
}

// Hold takes a hold on the session, as a caller inside Submit has one.
func (h *Host) Hold(ctx context.Context, id string) (release func(), err error) {
	s, err := h.session(ctx, id)
	if err != nil {
		return nil, err
	}
	return func() { h.release(s) }, nil
}
