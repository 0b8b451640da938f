// Package payloads locates the recorded provider responses that tests check
// adapters against. They live outside the repository, in shared/ beside it.
package payloads

import (
	"os"
	"path/filepath"
	"runtime"
)

// Dir returns the directory of one API kind's recorded payloads ("chat",
// "responses", "anthropic"): $CAIRN_PROVIDER_PAYLOADS/<kind> when set,
// otherwise ../shared/provider-payloads/<kind> beside the repository root.
func Dir(kind string) string {
	if root := os.Getenv("CAIRN_PROVIDER_PAYLOADS"); root != "" {
		return filepath.Join(root, kind)
	}
	_, file, _, _ := runtime.Caller(0) // …/internal/payloads/payloads.go
	repo := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	return filepath.Join(filepath.Dir(repo), "shared", "provider-payloads", kind)
}
