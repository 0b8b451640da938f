package postgres

import (
	"context"
	"fmt"
)

// BlobBytes is the sum of the sizes of the blobs every universe holds:
// what the blob catalog counts, for the metrics. It reads the whole
// catalog, so it is for a scrape, not for a request.
func (db *DB) BlobBytes(ctx context.Context) (int64, error) {
	var n int64
	if err := db.pool.QueryRow(ctx, `SELECT coalesce(sum(size), 0)::bigint FROM blobs`).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: blob bytes: %w", err)
	}
	return n, nil
}
