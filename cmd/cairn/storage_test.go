package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/api"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

func TestStorageReportAndHoldersCommands(t *testing.T) {
	ctx := context.Background()
	s := serveDir(t, t.TempDir())
	c := api.NewClient(s.url, nil)
	model := core.ModelSelection{ProviderID: "openai", APIKind: core.APIChatCompletions, Model: "gpt-4o-mini"}
	for _, id := range []string{"s-a", "s-b", "s-c"} {
		instr := "shared instructions"
		if id == "s-c" {
			instr = "own instructions"
		}
		if _, err := c.CreateSession(ctx, api.CreateSessionParams{SessionID: id, Model: model, Instructions: instr}); err != nil {
			t.Fatal(err)
		}
	}

	var report api.StorageReportResult
	if err := json.Unmarshal([]byte(s.mustCairn(t, "storage", "report", "--json")), &report); err != nil {
		t.Fatal(err)
	}
	if report.Universe == nil || report.Universe.Sessions != 3 || len(report.Sessions) != 3 || report.Cursor != "" {
		t.Fatalf("JSON report = %+v", report)
	}

	out := s.mustCairn(t, "storage", "report")
	for _, want := range []string{
		`(?m)^UNIVERSE$`,
		`(?m)^  blobs +\d+ \(inline \d+, object 0\)$`,
		`(?m)^  logical +[\d.]+ [KMG]?i?B in \d+ references from 3 sessions$`,
		`(?m)^  events +[1-9]\d* \([1-9][\d.]* [KMG]?i?B\)$`,
		`(?m)^SESSION +ROOTS +LOGICAL +SHARED +OWN +CHECKPOINTS +EVENTS$`,
		`(?m)^s-a +\d+ +\d+ B +\d+ B +\d+ B +\d+ \(\d+ B\) +[1-9]\d* \([1-9][\d.]* [KMG]?i?B\)$`,
		`(?m)^s-c +`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("report lacks %s:\n%s", want, out)
		}
	}

	page := s.mustCairn(t, "storage", "report", "--limit", "2")
	if !strings.Contains(page, "\ns-b ") || strings.Contains(page, "\ns-c ") || !strings.HasSuffix(page, "(more sessions: cairn storage report --after s-b)\n") {
		t.Fatalf("page of two:\n%s", page)
	}
	one := s.mustCairn(t, "storage", "report", "--session", "s-c")
	if strings.Contains(one, "UNIVERSE") || !regexp.MustCompile(`(?m)^s-c +\d+`).MatchString(one) || strings.Contains(one, "s-a") {
		t.Fatalf("one session:\n%s", one)
	}
	if _, err := s.cairn(t, "storage", "report", "--session", "ghost"); err == nil {
		t.Fatal("a report of an unknown session succeeded")
	}

	shared := content.Sum([]byte("shared instructions"))
	holders := s.mustCairn(t, "storage", "holders", shared.String())
	for _, want := range []string{
		`(?m)^` + regexp.QuoteMeta(shared.String()) + `$`,
		`(?m)^  size +19 B \(inline\)$`,
		`(?m)^  eligible +\S+ \(grace 168h0m0s\)$`,
		`(?m)^  state +held$`,
		`(?m)^  sessions +s-a, s-b$`,
		`(?m)^  parents +-$`,
	} {
		if !regexp.MustCompile(want).MatchString(holders) {
			t.Fatalf("holders lack %s:\n%s", want, holders)
		}
	}
	var h api.BlobHoldersResult
	if err := json.Unmarshal([]byte(s.mustCairn(t, "storage", "holders", shared.String(), "--grace", "1h", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	if h.GraceMs != 3_600_000 || h.EligibleAtMs != h.TouchedAtMs+3_600_000 || !h.Held {
		t.Fatalf("JSON holders = %+v", h)
	}
	for _, args := range [][]string{
		{"storage", "holders", "not-a-digest"},
		{"storage", "holders", content.Sum([]byte("never put")).String()},
		{"storage", "holders", shared.String(), "--grace", "-1s"},
	} {
		if _, err := s.cairn(t, args...); err == nil {
			t.Fatalf("cairn %s succeeded", strings.Join(args, " "))
		}
	}
}

func TestStorageSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := storageSize(n); got != want {
			t.Errorf("storageSize(%d) = %q, want %q", n, got, want)
		}
	}
}
