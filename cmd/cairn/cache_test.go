package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/core"
)

// serveDir serves the store in dir, as `cairn serve --data dir` would.
func serveDir(t *testing.T, dir string) *vfsServer {
	t.Helper()
	st, err := openStack(context.Background(), dir, hostOptions{logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewServer(st.host, api.ServerOptions{APIKinds: st.kinds}).Handler())
	t.Cleanup(func() { srv.Close(); st.close() })
	return &vfsServer{url: srv.URL, st: st}
}

// The demo's recorded session through the real Chat Completions lowering:
// tool rounds and steering repeat the whole previous request; the second
// run's first request loses the first run's skill activation, which expired
// with its run, and the report says so.
func TestCacheCommandPrintsTheDemoReport(t *testing.T) {
	dir := t.TempDir()
	playDemo(t, dir)
	s := serveDir(t, dir)

	var report api.CacheReportResult
	if err := json.Unmarshal([]byte(s.mustCairn(t, "cache", demoSession, "--json")), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Turns) != 5 {
		t.Fatalf("%d generations, want 5 (three turns, then two)", len(report.Turns))
	}
	var expired int64
	for _, ev := range readAll(t, s, demoSession) {
		if ev.Kind == core.KindContextEntriesRemoved && ev.Seq < report.Turns[3].Seq {
			expired = ev.Seq
		}
	}

	out := s.mustCairn(t, "cache", demoSession)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 6 || !regexp.MustCompile(`^SEQ +RUN +TURN +MODEL +REQUEST +PREFIX +REUSED +CACHED +BROKEN BY$`).MatchString(lines[0]) {
		t.Fatalf("table:\n%s", out)
	}
	row := func(i int, pattern string) {
		t.Helper()
		tr := report.Turns[i]
		want := fmt.Sprintf(`^%d +%s +%d +gpt-4o-mini +%d +%s$`, tr.Seq, tr.RunID, tr.Turn, tr.RequestBytes, pattern)
		if !regexp.MustCompile(want).MatchString(lines[i+1]) {
			t.Fatalf("row %d %q does not match %q", i, lines[i+1], want)
		}
	}
	row(0, `- +- +0`)
	row(1, fmt.Sprintf(`%d +100\.0%% +\d+`, report.Turns[0].SegmentBytes))
	row(2, fmt.Sprintf(`%d +100\.0%% +\d+`, report.Turns[1].SegmentBytes))
	row(3, fmt.Sprintf(`%d +\d+\.\d%% +\d+ +segment \d+ \(skill_activation, removed\) by seq %d context\.entries_removed`, report.Turns[3].PrefixBytes, expired))
	row(4, fmt.Sprintf(`%d +100\.0%% +\d+`, report.Turns[3].SegmentBytes))

	// Paging: the latest two, with the command for the earlier ones.
	page := s.mustCairn(t, "cache", demoSession, "--limit", "2")
	hint := fmt.Sprintf("(earlier generations: cairn cache %s --before %d)\n", demoSession, report.Turns[3].Seq)
	if !strings.HasPrefix(page, hint) || strings.Count(page, "\n") != 4 {
		t.Fatalf("page of two:\n%s", page)
	}
	if _, err := s.cairn(t, "cache", "no-such-session"); err == nil {
		t.Fatal("cairn cache of an unknown session succeeded")
	}
}

func readAll(t *testing.T, s *vfsServer, session string) []api.EventView {
	t.Helper()
	evs, err := api.NewClient(s.url, nil).ReadEvents(demoContext(t), api.EventsReadParams{SessionID: session, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Events
}
