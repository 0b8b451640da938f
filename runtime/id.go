package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/cairn-agents/cairn/core"
)

// RandomID returns prefix + 16 random hex digits: the ids a host gives new
// sessions (s_), runs (run_) and steering (st_) when the caller names none.
func RandomID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// SessionIDOrNew is the id a new session (or fork) gets: id, or a fresh one
// from newID when it is empty; an invalid id is refused.
func SessionIDOrNew(id string, newID func(prefix string) string) (string, error) {
	if id == "" {
		id = newID("s_")
	}
	return id, ValidateSessionID(id)
}

// ValidateSessionID accepts 1–128 characters of [A-Za-z0-9._:-], so ids are
// safe in URLs, workflow ids and file names.
func ValidateSessionID(id string) error {
	if len(id) == 0 || len(id) > 128 {
		return &core.Rejection{Kind: core.RejectInvalidInput, Message: "session id must be 1 to 128 characters"}
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return &core.Rejection{Kind: core.RejectInvalidInput, Message: fmt.Sprintf("session id %q may only contain letters, digits and . _ : -", id)}
		}
	}
	return nil
}
