package provider

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxCacheKeyLen is OpenAI's limit on prompt_cache_key.
const maxCacheKeyLen = 64

// PromptCacheKey derives the stable prompt_cache_key for a session: the id
// itself when it fits, otherwise "cairn-" and a SHA-256 prefix of the id. The
// derived form cannot be mistaken for a blob ref ("sha256:<64 hex>" is longer
// than 64 characters anyway, and the prefix differs). "" for no session.
func PromptCacheKey(sessionID string) string {
	if len(sessionID) <= maxCacheKeyLen {
		return sessionID
	}
	const prefix = "cairn-"
	sum := sha256.Sum256([]byte(sessionID))
	return prefix + hex.EncodeToString(sum[:])[:maxCacheKeyLen-len(prefix)]
}
