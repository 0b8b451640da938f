package core

import "sync/atomic"

// SharedSlice is a slice that any number of holders share and extend
// without changing one another's items: an extension is written in place,
// past the shared items, only when no other holder has claimed the
// backing array beyond them; otherwise it goes into a fresh array. Each
// turn of a session extends the list the last turn left (remembered
// entries, lowered bytes), so a turn costs what it adds, not a copy of all
// it keeps. The zero value is empty.
type SharedSlice[T any] struct {
	items []T
	used  *atomic.Int64 // how much of the backing array some holder claims
}

// Items are the slice's items. Callers must not modify them.
func (s SharedSlice[T]) Items() []T { return s.items }

// Extend returns the slice of the first keep items (keep ≤ len(Items()))
// followed by added.
func (s SharedSlice[T]) Extend(keep int, added ...T) SharedSlice[T] {
	out, used := s.items[:keep], s.used
	end := keep + len(added)
	if used == nil || end > cap(out) || !used.CompareAndSwap(int64(keep), int64(end)) {
		grown := make([]T, keep, max(2*end, 16))
		copy(grown, out)
		out, used = grown, new(atomic.Int64)
		used.Store(int64(end))
	}
	return SharedSlice[T]{items: append(out, added...), used: used}
}
