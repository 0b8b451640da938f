package main

import (
	"context"
	"errors"
	"sync"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/store/postgres"
)

// startUniverse builds the host of one universe over its store; close stops it.
type startUniverse func(ctx context.Context, slug string, st *postgres.Store) (host api.Host, close func(), err error)

// universeHosts serves the hosted mode: each request's API key selects its
// universe, and each universe has its own store and host, made on first use.
type universeHosts struct {
	db      *postgres.DB
	objects objstore.Store // nil: blobs over 64 KiB are refused
	start   startUniverse

	mu     sync.Mutex
	hosts  map[string]api.Host
	closes []func()
}

func newUniverseHosts(db *postgres.DB, objects objstore.Store, start startUniverse) *universeHosts {
	return &universeHosts{db: db, objects: objects, start: start, hosts: map[string]api.Host{}}
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
func (u *universeHosts) host(ctx context.Context, slug string) (api.Host, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if h := u.hosts[slug]; h != nil {
		return h, nil
	}
	st, err := u.db.Store(ctx, slug, u.objects)
	if err != nil {
		return nil, err
	}
	h, closeFn, err := u.start(ctx, slug, st)
	if err != nil {
		return nil, err
	}
	u.hosts[slug] = h
	u.closes = append(u.closes, closeFn)
	return h, nil
}

// startAll starts the host of every universe (the local host then resumes
// each universe's unfinished runs without waiting for a request).
func (u *universeHosts) startAll(ctx context.Context) error {
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
	for _, c := range u.closes {
		c()
	}
}

// universeStores opens each universe's store once, for workers.
type universeStores struct {
	db      *postgres.DB
	objects objstore.Store
	mu      sync.Mutex
	stores  map[string]*postgres.Store
}

func (u *universeStores) get(ctx context.Context, slug string) (*postgres.Store, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if st := u.stores[slug]; st != nil {
		return st, nil
	}
	st, err := u.db.Store(ctx, slug, u.objects)
	if err != nil {
		return nil, err
	}
	if u.stores == nil {
		u.stores = map[string]*postgres.Store{}
	}
	u.stores[slug] = st
	return st, nil
}

// load sums what the universes' local hosts hold (gateways hold no
// sessions).
func (u *universeHosts) load() (sessions, queuedRuns int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, h := range u.hosts {
		if l, ok := h.(interface{ Load() (int, int) }); ok {
			s, q := l.Load()
			sessions, queuedRuns = sessions+s, queuedRuns+q
		}
	}
	return sessions, queuedRuns
}
