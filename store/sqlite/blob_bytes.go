package sqlite

import (
	"context"
	"fmt"
)

// BlobBytes is the sum of the sizes of the blobs the store's universe
// holds: what the blob catalog counts, for the metrics. It reads the whole
// catalog, so it is for a scrape, not for a request.
func (s *Store) BlobBytes(ctx context.Context) (int64, error) {
	var n int64
	if err := s.reads.ScanTotals(ctx, `SELECT coalesce(sum(size), 0) FROM blobs WHERE universe = ?`, s.universe).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: blob bytes: %w", err)
	}
	return n, nil
}
