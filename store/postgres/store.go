package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/store"
)

// Store is the session log, blob store and retention-edge store of one
// universe. Every statement it runs names that universe; nothing it offers
// reads another. It is safe for concurrent use and shares its DB's pool.
type Store struct {
	universe string
	pool     *pgxpool.Pool
	now      func() time.Time
	// objects holds blob bodies over InlineMax; nil means such blobs can be
	// neither written nor read.
	objects objstore.Store

	// testHookBeforeInsert runs between uploading a large blob's object and
	// inserting its row, so tests can make writers race on purpose.
	testHookBeforeInsert func()

	appends *appendHub // shared by the DB's stores
}

var (
	_ store.SessionLog = (*Store)(nil)
	_ store.Edges      = (*Store)(nil)
	_ blob.Store       = (*Store)(nil)
)

// Store returns the store of an existing universe. objects may be nil, in
// which case blobs over InlineMax are refused.
func (db *DB) Store(ctx context.Context, universe string, objects objstore.Store) (*Store, error) {
	if err := ValidateUniverse(universe); err != nil {
		return nil, err
	}
	var exists bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM universes WHERE slug = $1)`, universe).Scan(&exists)
	if err != nil {
		return nil, fmt.Errorf("postgres: open universe %s: %w", universe, err)
	}
	if !exists {
		return nil, fmt.Errorf("postgres: %w: %s", ErrUnknownUniverse, universe)
	}
	return &Store{universe: universe, pool: db.pool, now: db.now, objects: objects, appends: db.appends}, nil
}

// Universe returns the universe this Store reads and writes.
func (s *Store) Universe() string { return s.universe }
