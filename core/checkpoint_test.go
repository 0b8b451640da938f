package core_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
)

func TestCheckpoint_UnusableCheckpointsAreTypedErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	h.mustAdmit(core.StartRun{AtMs: h.tick(), RunID: "r1", Input: input("hi")})
	h.next()
	good, err := core.EncodeCheckpoint(h.state())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.DecodeCheckpoint(good); err != nil {
		t.Fatalf("a fresh checkpoint is unusable: %v", err)
	}
	cases := map[string]string{
		"not json":           "{",
		"unknown version":    strings.Replace(string(good), `"version":1`, `"version":99`, 1),
		"other format":       strings.Replace(string(good), core.CheckpointFormat, "something.else", 1),
		"active not running": strings.Replace(string(good), `"status":"running"`, `"status":"completed"`, 1),
		"duplicate entry":    strings.Replace(string(good), `"entries":[`, `"entries":[{"entryId":"e1","kind":"message","source":"user","content":{"digest":"sha256:`+strings.Repeat("0", 64)+`","mediaType":"text/plain"},"tokenEstimate":{"tokens":1,"quality":"heuristic"}},`, 1),
	}
	for name, data := range cases {
		if data == string(good) {
			t.Fatalf("%s: the case did not change the checkpoint", name)
		}
		_, err := core.DecodeCheckpoint([]byte(data))
		var ce *core.CheckpointError
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %v, want *CheckpointError", name, err)
		}
	}
}
