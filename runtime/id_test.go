package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
)

func TestSessionIDOrNew(t *testing.T) {
	if id, err := runtime.SessionIDOrNew("", runtime.RandomID); err != nil || !strings.HasPrefix(id, "s_") || len(id) != len("s_")+16 {
		t.Errorf("no id: got %q, %v; want a fresh s_ id", id, err)
	}
	if id, err := runtime.SessionIDOrNew("mine", runtime.RandomID); err != nil || id != "mine" {
		t.Errorf("a valid id: got %q, %v", id, err)
	}
	var rej *core.Rejection
	if _, err := runtime.SessionIDOrNew("a/b", runtime.RandomID); !errors.As(err, &rej) || rej.Kind != core.RejectInvalidInput {
		t.Errorf("an id with a slash: got %v, want invalid_input", err)
	}
}
