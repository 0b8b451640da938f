// Command e2eworker is a test-only Temporal worker for the end-to-end crash
// test: the same worker as `cairn worker` (the same activities, workflow and
// Chat Completions adapter over the hosted store) plus one slow tool,
// slow_lookup, so a test can kill the process while a tool call is running.
//
// It prints "worker polling QUEUE" once it polls, and "slow_lookup started
// ARGS" each time the tool starts, on stdout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/provider"
	"github.com/cairn-agents/cairn/provider/chat"
	"github.com/cairn-agents/cairn/provider/endpoint"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/runtime/temporal"
	"github.com/cairn-agents/cairn/store/postgres"
)

func main() {
	pg := flag.String("postgres", "", "PostgreSQL URL of the hosted store")
	addr := flag.String("temporal", "", "Temporal frontend HOST:PORT")
	queue := flag.String("task-queue", temporal.DefaultQueue, "Temporal task queue")
	config := flag.String("config", "", "provider config file")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *pg, *addr, *queue, *config); err != nil {
		fmt.Fprintln(os.Stderr, "e2eworker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, pg, addr, queue, config string) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	db, err := postgres.Connect(ctx, pg)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.CheckSchema(ctx); err != nil {
		return err
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: tlog.NewStructuredLogger(logger)})
	if err != nil {
		return err
	}
	defer c.Close()
	tools, err := runtime.NewTools(append(runtime.VFSTools(), slowLookup{})...)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	stores := map[string]*postgres.Store{}
	acts := temporal.NewActivities(func(ctx context.Context, universe string) (temporal.Store, error) {
		mu.Lock()
		defer mu.Unlock()
		if st := stores[universe]; st != nil {
			return st, nil
		}
		st, err := db.Store(ctx, universe, nil)
		if err != nil {
			return nil, err
		}
		stores[universe] = st
		return st, nil
	}, map[string]provider.Adapter{core.APIChatCompletions: chat.New(endpoint.New(config, os.Getenv), http.DefaultClient)}, tools)
	w := temporal.NewWorker(c, queue, acts)
	if err := w.Start(); err != nil {
		return err
	}
	fmt.Printf("worker polling %s\n", queue)
	<-ctx.Done()
	w.Stop()
	return nil
}

// slowLookup answers after 1.5 s, or gives up when its context ends.
type slowLookup struct{}

func (slowLookup) Definition() provider.Tool {
	return provider.Tool{Name: "slow_lookup", Description: "Looks a term up, slowly.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}
}

func (slowLookup) Invoke(ctx context.Context, _ runtime.ToolEnv, args json.RawMessage) (runtime.ToolOutput, error) {
	var in struct {
		Q string `json:"q"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return runtime.ToolOutput{Content: []byte("bad arguments"), IsError: true}, nil
	}
	fmt.Printf("slow_lookup started %s\n", in.Q)
	select {
	case <-time.After(1500 * time.Millisecond):
	case <-ctx.Done():
		return runtime.ToolOutput{}, ctx.Err()
	}
	return runtime.ToolOutput{Content: []byte("lookup: " + in.Q + " is a tree")}, nil
}
