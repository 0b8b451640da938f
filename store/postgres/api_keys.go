package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// APIKey describes a stored key without revealing it: ID is the first 12
// hex digits of its SHA-256, enough to name it in `cairn universe key
// revoke` and useless for authenticating.
type APIKey struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
}

// keyIDPattern is an APIKey.ID.
var keyIDPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)

func keyID(hash []byte) string { return hex.EncodeToString(hash[:6]) }

// AddAPIKey issues another key for an existing universe, so a key can be
// rotated: add the new one, move clients over, revoke the old one. Like
// CreateUniverse it returns the only copy of the key.
func (db *DB) AddAPIKey(ctx context.Context, slug string) (string, APIKey, error) {
	if err := ValidateUniverse(slug); err != nil {
		return "", APIKey{}, err
	}
	key, hash, err := newAPIKey()
	if err != nil {
		return "", APIKey{}, fmt.Errorf("postgres: add API key: %w", err)
	}
	var created time.Time
	err = db.pool.QueryRow(ctx, `INSERT INTO api_keys (key_hash, universe, created_at)
		SELECT $1, slug, $3 FROM universes WHERE slug = $2 RETURNING created_at`, hash[:], slug, db.now()).Scan(&created)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", APIKey{}, fmt.Errorf("postgres: add API key: %w: %s", ErrUnknownUniverse, slug)
	}
	if err != nil {
		return "", APIKey{}, fmt.Errorf("postgres: add API key to %s: %w", slug, err)
	}
	return key, APIKey{ID: keyID(hash[:]), CreatedAt: created}, nil
}

// APIKeys lists a universe's keys, oldest first.
func (db *DB) APIKeys(ctx context.Context, slug string) ([]APIKey, error) {
	if err := ValidateUniverse(slug); err != nil {
		return nil, err
	}
	if err := db.universeExists(ctx, slug); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT key_hash, created_at FROM api_keys WHERE universe = $1 ORDER BY created_at, key_hash`, slug)
	if err != nil {
		return nil, fmt.Errorf("postgres: list API keys of %s: %w", slug, err)
	}
	var out []APIKey
	var hash []byte
	var k APIKey
	_, err = pgx.ForEachRow(rows, []any{&hash, &k.CreatedAt}, func() error {
		k.ID = keyID(hash)
		out = append(out, k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list API keys of %s: %w", slug, err)
	}
	return out, nil
}

// RevokeAPIKey deletes one key of a universe, named by its ID or by the key
// itself; requests carrying it are refused from then on (keys are looked up
// on every request). A key of another universe, or none, is ErrUnknownKey.
func (db *DB) RevokeAPIKey(ctx context.Context, slug, idOrKey string) (APIKey, error) {
	if err := ValidateUniverse(slug); err != nil {
		return APIKey{}, err
	}
	// A key matches its whole hash; an id, the hash's first six bytes.
	match, arg := `key_hash = $2`, []byte(nil)
	switch {
	case strings.HasPrefix(idOrKey, APIKeyPrefix):
		h := sha256.Sum256([]byte(idOrKey))
		arg = h[:]
	case keyIDPattern.MatchString(idOrKey):
		match = `substring(key_hash from 1 for 6) = $2`
		arg, _ = hex.DecodeString(idOrKey)
	default:
		// Never echo the argument: it may be a mistyped key.
		return APIKey{}, fmt.Errorf("%w: name the key by its 12-hex-digit id (cairn universe key list) or give the key itself", ErrUnknownKey)
	}
	var revoked []APIKey
	err := inTx(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `DELETE FROM api_keys WHERE universe = $1 AND `+match+`
			RETURNING key_hash, created_at`, slug, arg)
		if err != nil {
			return err
		}
		var hash []byte
		var k APIKey
		if _, err := pgx.ForEachRow(rows, []any{&hash, &k.CreatedAt}, func() error {
			k.ID = keyID(hash)
			revoked = append(revoked, k)
			return nil
		}); err != nil {
			return err
		}
		if len(revoked) > 1 {
			return fmt.Errorf("id %s names %d keys; revoke by the key itself", keyID(arg), len(revoked))
		}
		return nil
	})
	if err != nil {
		return APIKey{}, fmt.Errorf("postgres: revoke API key of %s: %w", slug, err)
	}
	if len(revoked) == 0 {
		return APIKey{}, fmt.Errorf("postgres: revoke: %w: universe %s has no key %s", ErrUnknownKey, slug, keyID(arg))
	}
	return revoked[0], nil
}

func (db *DB) universeExists(ctx context.Context, slug string) error {
	var ok bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM universes WHERE slug = $1)`, slug).Scan(&ok); err != nil {
		return fmt.Errorf("postgres: universe %s: %w", slug, err)
	}
	if !ok {
		return fmt.Errorf("postgres: %w: %s", ErrUnknownUniverse, slug)
	}
	return nil
}
