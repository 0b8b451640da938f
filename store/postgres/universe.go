package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Universe errors.
var (
	// ErrInvalidUniverse: the slug is not 1–63 lowercase letters, digits and
	// inner hyphens.
	ErrInvalidUniverse = errors.New("invalid universe slug")
	// ErrUniverseExists: CreateUniverse of a slug already taken.
	ErrUniverseExists = errors.New("universe already exists")
	// ErrUnknownUniverse: Store for a universe that was never created.
	ErrUnknownUniverse = errors.New("unknown universe")
	// ErrUnknownKey: an API key that is missing, malformed or not on record.
	ErrUnknownKey = errors.New("unknown API key")
)

// DefaultUniverse is the universe of a single-tenant deployment.
const DefaultUniverse = "default"

// APIKeyPrefix starts every API key, so a leaked key is recognisable (and
// findable by secret scanners).
const APIKeyPrefix = "cairn_"

// slugPattern is a DNS label: a slug is safe as an object key segment, a
// hostname part and a CLI argument (it cannot start with '-').
var slugPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidateUniverse accepts 1–63 lowercase letters, digits and hyphens, not
// starting or ending with a hyphen.
func ValidateUniverse(slug string) error {
	if !slugPattern.MatchString(slug) {
		return fmt.Errorf("%w %q: use 1–63 lowercase letters, digits and inner hyphens", ErrInvalidUniverse, slug)
	}
	return nil
}

// CreateUniverse creates a universe and its first API key, and returns the
// key. Only the key's SHA-256 is stored: the returned string is the only copy.
func (db *DB) CreateUniverse(ctx context.Context, slug string) (apiKey string, err error) {
	if err := ValidateUniverse(slug); err != nil {
		return "", err
	}
	key, hash, err := newAPIKey()
	if err != nil {
		return "", fmt.Errorf("postgres: create universe: %w", err)
	}
	err = inTx(ctx, db.pool, func(tx pgx.Tx) error {
		now := db.now()
		tag, err := tx.Exec(ctx, `INSERT INTO universes (slug, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, slug, now)
		if err != nil {
			return fmt.Errorf("postgres: create universe %s: %w", slug, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("postgres: %w: %s", ErrUniverseExists, slug)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO api_keys (key_hash, universe, created_at) VALUES ($1, $2, $3)`,
			hash[:], slug, now); err != nil {
			return fmt.Errorf("postgres: create universe %s: store key: %w", slug, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return key, nil
}

// newAPIKey returns a fresh key and the SHA-256 under which it is stored.
func newAPIKey() (string, [32]byte, error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", [32]byte{}, err
	}
	key := APIKeyPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	return key, sha256.Sum256([]byte(key)), nil
}

// EnsureUniverse creates the universe if it does not exist, with no API key:
// for the default universe of a single-tenant server, and for tests.
func (db *DB) EnsureUniverse(ctx context.Context, slug string) error {
	if err := ValidateUniverse(slug); err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO universes (slug, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		slug, db.now()); err != nil {
		return fmt.Errorf("postgres: ensure universe %s: %w", slug, err)
	}
	return nil
}

// UniverseForKey returns the universe an API key belongs to. A missing,
// malformed or unknown key is ErrUnknownKey; the error never repeats the key.
func (db *DB) UniverseForKey(ctx context.Context, key string) (string, error) {
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) > 256 {
		return "", ErrUnknownKey
	}
	hash := sha256.Sum256([]byte(key))
	var slug string
	err := db.pool.QueryRow(ctx, `SELECT universe FROM api_keys WHERE key_hash = $1`, hash[:]).Scan(&slug)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrUnknownKey
	}
	if err != nil {
		return "", fmt.Errorf("postgres: look up API key: %w", err)
	}
	return slug, nil
}
