package postgres

import (
	"context"
	"fmt"
)

// Universes lists every universe's slug, sorted. Only the operator's process
// (serve resuming work, admin commands) calls it; no API request can.
func (db *DB) Universes(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT slug FROM universes ORDER BY slug`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list universes: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var slug string
		if err := rows.Scan(&slug); err != nil {
			return nil, err
		}
		out = append(out, slug)
	}
	return out, rows.Err()
}
