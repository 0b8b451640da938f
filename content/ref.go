package content

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ContentRef describes immutable bytes: their digest, how to read them (media
// type) and, for provider-native material, which provider encoding they are.
type ContentRef struct {
	Digest       Digest `json:"digest"`
	MediaType    string `json:"mediaType"`
	ProviderKind string `json:"providerKind,omitempty"`
}

// Well-known media types used across Cairn.
const (
	MediaText = "text/plain; charset=utf-8"
	MediaJSON = "application/json"
)

// IsText reports whether a media type is text a model reads as is (any
// text/* type; the bytes are UTF-8).
func IsText(mediaType string) bool { return strings.HasPrefix(mediaType, "text/") }

// ErrInvalidRef is returned (wrapped) for a ContentRef without a digest or media type.
var ErrInvalidRef = errors.New("invalid content ref")

// Validate checks that the ref names bytes and says how to read them.
func (r ContentRef) Validate() error {
	if r.Digest.IsZero() {
		return fmt.Errorf("%w: missing digest", ErrInvalidRef)
	}
	if r.MediaType == "" {
		return fmt.Errorf("%w: missing media type", ErrInvalidRef)
	}
	if err := ValidateMediaType(r.MediaType); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRef, err)
	}
	return nil
}

// MarshalJSON writes fields in a fixed order, so refs embedded in events are stable.
func (r ContentRef) MarshalJSON() ([]byte, error) {
	type plain ContentRef
	return json.Marshal(plain(r))
}

// Ref builds a ContentRef for data already hashed by the caller's store.
func Ref(data []byte, mediaType, providerKind string) ContentRef {
	return ContentRef{Digest: Sum(data), MediaType: mediaType, ProviderKind: providerKind}
}
