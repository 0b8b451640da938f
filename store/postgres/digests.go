package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-agents/cairn/content"
)

// Digests are stored as their 32 raw bytes (bytea), whose order is byte
// order: the order content.SortDigests gives.

// digestArgs converts digests to a bytea[] argument.
func digestArgs(ds []content.Digest) [][]byte {
	out := make([][]byte, len(ds))
	for i := range ds {
		out[i] = ds[i][:]
	}
	return out
}

func parseDigests(raw [][]byte) ([]content.Digest, error) {
	out := make([]content.Digest, len(raw))
	for i, b := range raw {
		if len(b) != len(out[i]) {
			return nil, fmt.Errorf("postgres: stored digest has %d bytes", len(b))
		}
		out[i] = content.Digest(b)
	}
	return out, nil
}

// collectBytes reads a batch's next result, a single bytea column.
func collectBytes(br pgx.BatchResults) ([][]byte, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[[]byte])
}

// absent returns the digests of want (sorted, unique) not in found.
func absent(want []content.Digest, found [][]byte) []content.Digest {
	if len(found) == len(want) {
		return nil // found is a subset of want without repeats
	}
	have := make(map[content.Digest]bool, len(found))
	for _, f := range found {
		have[content.Digest(f)] = true
	}
	var out []content.Digest
	for _, d := range want {
		if !have[d] {
			out = append(out, d)
		}
	}
	return out
}
