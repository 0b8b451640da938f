package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/store/postgres"
)

func TestCreateUniverseIssuesAKeyAndStoresOnlyItsHash(t *testing.T) {
	ctx := context.Background()
	db, url := connect(t)
	key, err := db.CreateUniverse(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(key, "cairn_"))
	if !strings.HasPrefix(key, "cairn_") || err != nil || len(raw) != 32 {
		t.Fatalf("key %q: want cairn_ and 32 base64url bytes (%v)", key, err)
	}
	if got, err := db.UniverseForKey(ctx, key); err != nil || got != "acme" {
		t.Fatalf("UniverseForKey = %q, %v; want acme", got, err)
	}

	conn := sql(t, url)
	var stored []byte
	if err := conn.QueryRow(ctx, `SELECT key_hash FROM api_keys WHERE universe = 'acme'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte(key)); string(stored) != string(sum[:]) {
		t.Fatalf("stored %x, want the key's SHA-256", stored)
	}
	// Nowhere in the database is the key itself.
	if n := countRows(t, conn, `SELECT count(*) FROM api_keys AS k
		WHERE position(convert_to($1, 'UTF8') IN k.key_hash) > 0 OR k::text LIKE '%' || $1 || '%'`, key); n != 0 {
		t.Fatalf("the key is stored in clear")
	}

	if _, err := db.CreateUniverse(ctx, "acme"); !errors.Is(err, postgres.ErrUniverseExists) {
		t.Fatalf("second CreateUniverse(acme): %v, want ErrUniverseExists", err)
	}
	other, err := db.CreateUniverse(ctx, "globex")
	if err != nil || other == key {
		t.Fatalf("CreateUniverse(globex) = %q, %v; want a different key", other, err)
	}
	if got, err := db.UniverseForKey(ctx, other); err != nil || got != "globex" {
		t.Fatalf("UniverseForKey(globex's key) = %q, %v", got, err)
	}

	for _, bad := range []string{"", "cairn_", key + "x", key[:len(key)-1], strings.TrimPrefix(key, "cairn_"),
		"cairn_" + base64.RawURLEncoding.EncodeToString(make([]byte, 32))} {
		got, err := db.UniverseForKey(ctx, bad)
		if !errors.Is(err, postgres.ErrUnknownKey) {
			t.Fatalf("UniverseForKey(%q) = %q, %v; want ErrUnknownKey", bad, got, err)
		}
		if bad != "" && strings.Contains(err.Error(), bad) {
			t.Fatalf("error %q repeats the key", err)
		}
	}
}

func TestUniverseSlugs(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	for _, bad := range []string{"", "Acme", "a_b", "a.b", "-a", "a-", "a/b", "é", strings.Repeat("a", 64)} {
		if _, err := db.CreateUniverse(ctx, bad); !errors.Is(err, postgres.ErrInvalidUniverse) {
			t.Fatalf("CreateUniverse(%q): %v, want ErrInvalidUniverse", bad, err)
		}
		if err := db.EnsureUniverse(ctx, bad); !errors.Is(err, postgres.ErrInvalidUniverse) {
			t.Fatalf("EnsureUniverse(%q): %v, want ErrInvalidUniverse", bad, err)
		}
		if _, err := db.Store(ctx, bad, nil); !errors.Is(err, postgres.ErrInvalidUniverse) {
			t.Fatalf("Store(%q): %v, want ErrInvalidUniverse", bad, err)
		}
	}
	for _, good := range []string{"a", "0", "a-b", "team-42", strings.Repeat("a", 63)} {
		if _, err := db.CreateUniverse(ctx, good); err != nil {
			t.Fatalf("CreateUniverse(%q): %v", good, err)
		}
	}
}

func TestStoreNeedsAnExistingUniverse(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	if _, err := db.Store(ctx, "nobody", nil); !errors.Is(err, postgres.ErrUnknownUniverse) {
		t.Fatalf("Store(nobody): %v, want ErrUnknownUniverse", err)
	}
	for range 2 {
		if err := db.EnsureUniverse(ctx, postgres.DefaultUniverse); err != nil {
			t.Fatalf("EnsureUniverse: %v", err)
		}
	}
	s, err := db.Store(ctx, postgres.DefaultUniverse, nil)
	if err != nil || s.Universe() != postgres.DefaultUniverse {
		t.Fatalf("Store(default) = %v, %v", s, err)
	}
	if _, err := db.CreateUniverse(ctx, postgres.DefaultUniverse); !errors.Is(err, postgres.ErrUniverseExists) {
		t.Fatalf("CreateUniverse over EnsureUniverse: %v, want ErrUniverseExists", err)
	}
}
