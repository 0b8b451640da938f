package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/postgres"
	"github.com/cairn-agents/cairn/store/sqlite"
)

// readyCheck is one dependency GET /readyz checks.
type readyCheck struct {
	name  string
	check func(ctx context.Context) error
}

// readyTimeout bounds the checks of one /readyz.
const readyTimeout = 5 * time.Second

// withHealth serves GET /healthz (the process is serving) and GET /readyz
// (each check passes) beside next. Both answer without an API key and
// whatever Host a probe sends: they say nothing of any session, and an
// error's words stay in the server's log.
func withHealth(next http.Handler, checks []readyCheck, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeHealth(w, http.StatusOK, health{Status: "serving"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		out, status := health{Status: "ready"}, http.StatusOK
		for _, c := range checks {
			result := "ok"
			if err := c.check(ctx); err != nil {
				logger.Warn("readiness check failed", "check", c.name, "err", err)
				result, out.Status, status = "failing", "not ready", http.StatusServiceUnavailable
			}
			out.Checks = append(out.Checks, checkResult{Name: c.name, Status: result})
		}
		writeHealth(w, status, out)
	})
	mux.Handle("/", next)
	return mux
}

type health struct {
	Status string        `json:"status"`
	Checks []checkResult `json:"checks,omitempty"`
}

type checkResult struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok or failing
}

func writeHealth(w http.ResponseWriter, status int, h health) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(h)
}

// sqliteReady: the embedded store answers a read.
func sqliteReady(st *sqlite.Store) readyCheck {
	return readyCheck{"store", func(ctx context.Context) error {
		_, err := st.Session(ctx, "readyz-probe")
		if errors.Is(err, store.ErrSessionNotFound) {
			return nil
		}
		return err
	}}
}

// postgresReady: the database answers and holds the schema this binary
// knows.
func postgresReady(db *postgres.DB) readyCheck {
	return readyCheck{"store", db.CheckSchema}
}

// objectsReady: the bucket answers a read (of a key nobody writes).
func objectsReady(objects objstore.Store) readyCheck {
	return readyCheck{"objects", func(ctx context.Context) error {
		_, err := objects.Get(ctx, "readyz-probe")
		if errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		return err
	}}
}

// temporalReady: the Temporal frontend answers its health check.
func temporalReady(c client.Client) readyCheck {
	return readyCheck{"temporal", func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}}
}
