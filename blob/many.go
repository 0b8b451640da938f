package blob

import (
	"context"

	"github.com/cairn-agents/cairn/content"
)

// ManyGetter is a Store that reads many blobs in one round trip. A
// session's first request in a process lowers every entry of its context,
// and one read per entry cost more than the request's own work.
type ManyGetter interface {
	// GetMany returns the verified bytes of those digests of ds it can
	// read at once. A digest it leaves out is for Get to read or report
	// missing: GetMany is a faster path, never the only one.
	GetMany(ctx context.Context, ds []content.Digest) (map[content.Digest][]byte, error)
}

// Getter is the part of a Store that reads.
type Getter interface {
	Get(ctx context.Context, d content.Digest) ([]byte, error)
}

// GetMany reads what it can of ds from s in one call: nothing when s is
// not a ManyGetter.
func GetMany(ctx context.Context, s Getter, ds []content.Digest) (map[content.Digest][]byte, error) {
	m, ok := s.(ManyGetter)
	if !ok || len(ds) == 0 {
		return nil, nil
	}
	return m.GetMany(ctx, ds)
}

// Preloaded is s, but Get answers first from got: bytes one GetMany read
// for a single request. Everything else goes to s.
func Preloaded(s Store, got map[content.Digest][]byte) Store {
	if len(got) == 0 {
		return s
	}
	return &preloaded{Store: s, got: got}
}

type preloaded struct {
	Store
	got map[content.Digest][]byte
}

func (p *preloaded) Get(ctx context.Context, d content.Digest) ([]byte, error) {
	if data, ok := p.got[d]; ok {
		// A copy, as from any store: the caller may keep or change it.
		return append([]byte{}, data...), nil
	}
	return p.Store.Get(ctx, d)
}
