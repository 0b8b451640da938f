package api

import (
	"context"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/content"
)

// admit is the admission of existing refs that a request names: one batch
// renews their retention grace before the work reaches a host, so the
// collector keeps them until the append that roots them. A ref the universe
// lacks fails the request with missing_blob before anything is written.
func (s call) admit(ctx context.Context, ds []content.Digest) error {
	if len(ds) == 0 {
		return nil
	}
	missing, err := s.host.Blobs().Touch(ctx, ds)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &blob.MissingError{Digests: missing}
	}
	return nil
}
