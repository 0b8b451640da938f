// Package objstore keeps the bodies of large blobs outside the database:
// a local directory for the embedded setup, S3-compatible storage when hosted.
// It knows nothing about digests; callers choose the keys.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Store is a flat key → bytes map; objstoretest.Run is its executable
// contract and every backend passes it.
//
// Put on an existing key replaces the whole object, last writer wins: a
// reader sees the complete old body or the complete new one, never a mix or
// a prefix (S3 PUT semantics, which the directory backend matches with
// rename). Callers that must not overwrite choose fresh keys. Delete of an
// absent key succeeds, so cleanup after a lost race can be retried freely.
//
// Keys are slash paths (see ValidateKey). A key must not also be a leading
// path of another key ("a" and "a/b"): AWS S3 holds both, a directory (and
// versitygw's posix backend) cannot.
type Store interface {
	Put(ctx context.Context, key string, data []byte) error
	// Get returns an error matching ErrNotFound when the key is absent.
	Get(ctx context.Context, key string) ([]byte, error)
	Delete(ctx context.Context, key string) error
}

// ErrNotFound is matched (errors.Is) by the error for an absent key.
var ErrNotFound = errors.New("object not found")

// ErrInvalidKey is matched by the error for a key ValidateKey rejects.
var ErrInvalidKey = errors.New("invalid object key")

// maxKeyLen keeps keys within what S3 (1024 bytes) and file systems accept.
const maxKeyLen = 1024

// ValidateKey accepts relative slash-separated paths of non-empty segments.
// It rejects "." and ".." segments and absolute paths so a key can never
// name a file outside the store's root, backslashes and NUL bytes so a key
// means the same on every platform, and segments starting with "." because
// those names are reserved for the directory backend's temporary files.
func ValidateKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why) }
	switch {
	case key == "":
		return bad("empty")
	case len(key) > maxKeyLen:
		return bad("too long")
	case strings.HasPrefix(key, "/"):
		return bad("absolute path")
	case strings.ContainsAny(key, "\\\x00"):
		return bad("contains a backslash or NUL")
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return bad("empty path segment")
		case seg == "." || seg == "..":
			return bad("dot segment")
		case strings.HasPrefix(seg, "."):
			return bad("segment starts with a dot")
		}
	}
	return nil
}
