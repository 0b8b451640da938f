package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/store/postgres"
)

func TestAPIKeysRotateAndRevoke(t *testing.T) {
	ctx := context.Background()
	db, _ := connect(t)
	first, err := db.CreateUniverse(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	globex, err := db.CreateUniverse(ctx, "globex")
	if err != nil {
		t.Fatal(err)
	}
	second, info, err := db.AddAPIKey(ctx, "acme")
	if err != nil || second == first || len(info.ID) != 12 {
		t.Fatalf("AddAPIKey = %q, %+v, %v", second, info, err)
	}
	for _, k := range []string{first, second} {
		if got, err := db.UniverseForKey(ctx, k); err != nil || got != "acme" {
			t.Fatalf("UniverseForKey = %q, %v; both keys open acme", got, err)
		}
	}
	keys, err := db.APIKeys(ctx, "acme")
	if err != nil || len(keys) != 2 || keys[1].ID != info.ID {
		t.Fatalf("APIKeys(acme) = %+v, %v; want two, the added one last", keys, err)
	}
	for _, k := range keys {
		if strings.Contains(first, k.ID) || strings.Contains(second, k.ID) {
			t.Fatalf("key id %s is part of a key", k.ID)
		}
	}

	// Revoking by id ends the first key at once; the second still works.
	if got, err := db.RevokeAPIKey(ctx, "acme", keys[0].ID); err != nil || got.ID != keys[0].ID {
		t.Fatalf("RevokeAPIKey(id) = %+v, %v", got, err)
	}
	if _, err := db.UniverseForKey(ctx, first); !errors.Is(err, postgres.ErrUnknownKey) {
		t.Fatalf("a revoked key still opens a universe: %v", err)
	}
	if got, err := db.UniverseForKey(ctx, second); err != nil || got != "acme" {
		t.Fatalf("the other key: %q, %v", got, err)
	}
	// By the key itself; twice is an unknown key.
	if _, err := db.RevokeAPIKey(ctx, "acme", second); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RevokeAPIKey(ctx, "acme", second); !errors.Is(err, postgres.ErrUnknownKey) {
		t.Fatalf("revoking twice: %v, want ErrUnknownKey", err)
	}
	// Another universe's key is not acme's to revoke, and stays valid.
	if _, err := db.RevokeAPIKey(ctx, "acme", globex); !errors.Is(err, postgres.ErrUnknownKey) {
		t.Fatalf("revoking globex's key through acme: %v", err)
	}
	if got, err := db.UniverseForKey(ctx, globex); err != nil || got != "globex" {
		t.Fatalf("globex's key after acme's revocations: %q, %v", got, err)
	}
	// Bad input: a clear error that never repeats what was typed.
	for _, bad := range []string{"not-a-key-or-id", "ABCDEF123456", "cairn_mistyped"} {
		_, err := db.RevokeAPIKey(ctx, "acme", bad)
		if !errors.Is(err, postgres.ErrUnknownKey) || strings.Contains(err.Error(), bad) {
			t.Fatalf("RevokeAPIKey(%q) = %v", bad, err)
		}
	}
	if _, _, err := db.AddAPIKey(ctx, "initech"); !errors.Is(err, postgres.ErrUnknownUniverse) {
		t.Fatalf("AddAPIKey of an unknown universe: %v", err)
	}
	if _, err := db.APIKeys(ctx, "initech"); !errors.Is(err, postgres.ErrUnknownUniverse) {
		t.Fatalf("APIKeys of an unknown universe: %v", err)
	}
	if keys, err := db.APIKeys(ctx, "acme"); err != nil || len(keys) != 0 {
		t.Fatalf("acme's keys after revoking both: %+v, %v", keys, err)
	}
}
