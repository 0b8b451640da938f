package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/vfs"
)

// RefParam names a blob in params. It takes either shape a client holds: the
// ref object every result gives ({digest, mediaType, providerKind?}) or its
// digest string, so what one method returns is what the next one accepts.
// MediaType is empty when the ref came as a string.
type RefParam struct {
	Digest       content.Digest
	MediaType    string
	ProviderKind string
}

// RefOf is the param form of a ref a result gave.
func RefOf(r content.ContentRef) RefParam {
	return RefParam{Digest: r.Digest, MediaType: r.MediaType, ProviderKind: r.ProviderKind}
}

// DigestRef is the param form of a bare digest.
func DigestRef(d content.Digest) RefParam { return RefParam{Digest: d} }

// Ref is the ContentRef named, with mediaType in place of one the param
// did not give.
func (r RefParam) Ref(mediaType string) content.ContentRef {
	if r.MediaType != "" {
		mediaType = r.MediaType
	}
	return content.ContentRef{Digest: r.Digest, MediaType: mediaType, ProviderKind: r.ProviderKind}
}

// IsZero reports whether no ref was given.
func (r RefParam) IsZero() bool { return r.Digest.IsZero() }

// snapshotDigest is the manifest digest a snapshot param names; a ref
// object must be a snapshot manifest's.
func snapshotDigest(field string, r *RefParam) (content.Digest, error) {
	switch {
	case r == nil || r.IsZero():
		return content.Digest{}, invalidParams(field + " is required")
	case r.MediaType != "" && r.MediaType != vfs.MediaType:
		return content.Digest{}, invalidParams(field + ": a snapshot's ref has media type " + vfs.MediaType + ", not " + strconv.Quote(r.MediaType))
	}
	return r.Digest, nil
}

// snapshotRef is the ref of a snapshot's manifest.
func snapshotRef(d content.Digest) content.ContentRef {
	return content.ContentRef{Digest: d, MediaType: vfs.MediaType}
}

func (RefParam) paramKind() string { return "a digest string or a ref object" }

// refObject is the object form, decoded with the API's strict rules.
type refObject struct {
	Digest       *content.Digest `json:"digest"`
	MediaType    string          `json:"mediaType"`
	ProviderKind string          `json:"providerKind,omitempty"`
}

// UnmarshalJSON accepts a digest string or a ref object; null leaves r zero
// (an absent ref).
func (r *RefParam) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return &paramError{"expected a digest string or a ref object"}
	case b[0] == 'n':
		*r = RefParam{}
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return &paramError{"expected a digest string or a ref object"}
		}
		d, err := content.ParseDigest(s)
		if err != nil {
			return &paramError{err.Error() + `: a digest is "sha256:" and 64 lowercase hex digits`}
		}
		*r = RefParam{Digest: d}
		return nil
	case b[0] == '{':
		var o refObject
		if err := jsonv2.Unmarshal(b, &o, jsonv2.RejectUnknownMembers(true)); err != nil {
			var own *paramError
			if errors.As(err, &own) {
				return own
			}
			return &paramError{decodeMessage("the ref object", err)}
		}
		if o.Digest == nil {
			return &paramError{"a ref object needs its digest"}
		}
		if o.MediaType != "" {
			if err := content.ValidateMediaType(o.MediaType); err != nil {
				return &paramError{"mediaType: " + err.Error()}
			}
		}
		*r = RefParam{Digest: *o.Digest, MediaType: o.MediaType, ProviderKind: o.ProviderKind}
		return nil
	}
	return &paramError{"expected a digest string or a ref object"}
}

// MarshalJSON writes the object form when a media type is known, else the
// digest string: the Go client sends what it was given.
func (r RefParam) MarshalJSON() ([]byte, error) {
	if r.IsZero() {
		return []byte("null"), nil // no ref: the server says it is required
	}
	if r.MediaType == "" {
		return json.Marshal(r.Digest)
	}
	return json.Marshal(r.Ref(""))
}
