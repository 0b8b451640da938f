package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/runtime/local"
	"github.com/cairn-agents/cairn/store/postgres"
)

// universeHosts serves the hosted mode: each request's API key selects its
// universe, and each universe has its own store and host, started on first
// use (or at start when it has unfinished work).
type universeHosts struct {
	db      *postgres.DB
	objects objstore.Store // nil: blobs over 64 KiB are refused
	opts    hostOptions

	mu    sync.Mutex
	hosts map[string]*local.Host
}

func newUniverseHosts(db *postgres.DB, objects objstore.Store, o hostOptions) *universeHosts {
	return &universeHosts{db: db, objects: objects, opts: o, hosts: map[string]*local.Host{}}
}

// HostFor selects the universe of a bearer key.
func (u *universeHosts) HostFor(ctx context.Context, bearer string) (api.Host, error) {
	if bearer == "" {
		return nil, api.ErrUnauthorized
	}
	slug, err := u.db.UniverseForKey(ctx, bearer)
	if errors.Is(err, postgres.ErrUnknownKey) {
		return nil, api.ErrUnauthorized
	}
	if err != nil {
		return nil, err
	}
	return u.host(ctx, slug)
}

// host returns the universe's host, starting it on first use.
func (u *universeHosts) host(ctx context.Context, slug string) (*local.Host, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if h := u.hosts[slug]; h != nil {
		return h, nil
	}
	st, err := u.db.Store(ctx, slug, u.objects)
	if err != nil {
		return nil, err
	}
	h, err := startHost(ctx, st, st, u.opts)
	if err != nil {
		return nil, fmt.Errorf("universe %s: %w", slug, err)
	}
	u.hosts[slug] = h
	return h, nil
}

// resumeAll starts the host of every universe, so unfinished runs continue
// without waiting for a request.
func (u *universeHosts) resumeAll(ctx context.Context) error {
	slugs, err := u.db.Universes(ctx)
	if err != nil {
		return err
	}
	for _, slug := range slugs {
		if _, err := u.host(ctx, slug); err != nil {
			return err
		}
	}
	return nil
}

func (u *universeHosts) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, h := range u.hosts {
		h.Close()
	}
}
