// Package blob is content-addressed storage: immutable bytes named by their
// SHA-256. Every backend implements Store and passes blobtest's conformance suite.
package blob

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-agents/cairn/content"
)

// Store keeps immutable bytes by digest. Put of bytes that already exist is a
// no-op apart from renewing their last-put time; Get verifies the bytes it returns.
type Store interface {
	Put(ctx context.Context, data []byte) (content.Digest, error)
	Get(ctx context.Context, d content.Digest) ([]byte, error)
	// Missing returns the digests of ds that the store does not hold, sorted.
	Missing(ctx context.Context, ds []content.Digest) ([]content.Digest, error)
	// Touch is an admission of existing refs: it renews the retention grace
	// of the digests of ds the store holds, as a put of their bytes would,
	// and returns those it does not hold, sorted. Reads never renew grace.
	Touch(ctx context.Context, ds []content.Digest) ([]content.Digest, error)
	Usage(ctx context.Context) (Usage, error)
}

// Usage is how much a store holds.
type Usage struct {
	Blobs int64 `json:"blobs"`
	Bytes int64 `json:"bytes"`
}

// ErrNotFound is returned (wrapped in *NotFoundError) when a blob is absent.
var ErrNotFound = errors.New("blob not found")

// ErrCorrupt is returned when stored bytes no longer hash to their digest.
var ErrCorrupt = errors.New("blob corrupt")

// NotFoundError names the missing digest.
type NotFoundError struct{ Digest content.Digest }

func (e *NotFoundError) Error() string { return fmt.Sprintf("blob not found: %s", e.Digest) }
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// MissingError lists every digest an operation needed and did not find.
type MissingError struct{ Digests []content.Digest }

func (e *MissingError) Error() string {
	parts := make([]string, len(e.Digests))
	for i, d := range e.Digests {
		parts[i] = d.String()
	}
	return "missing blobs: " + strings.Join(parts, ", ")
}
func (e *MissingError) Unwrap() error { return ErrNotFound }

// Verify checks that data hashes to d.
func Verify(d content.Digest, data []byte) error {
	if content.Sum(data) != d {
		return fmt.Errorf("%w: %s", ErrCorrupt, d)
	}
	return nil
}

// Checked is a stored body once it has the size its store recorded and
// hashes to d; an empty body is empty, not nil.
func Checked(d content.Digest, data []byte, size int64) ([]byte, error) {
	if int64(len(data)) != size {
		return nil, fmt.Errorf("%w: %s: %d bytes stored, %d recorded", ErrCorrupt, d, len(data), size)
	}
	if err := Verify(d, data); err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// PutRef stores data and returns its ContentRef with the given media type.
func PutRef(ctx context.Context, s Store, data []byte, mediaType, providerKind string) (content.ContentRef, error) {
	d, err := s.Put(ctx, data)
	if err != nil {
		return content.ContentRef{}, err
	}
	return content.ContentRef{Digest: d, MediaType: mediaType, ProviderKind: providerKind}, nil
}
