package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cairn-agents/cairn/archive"
	"github.com/cairn-agents/cairn/content"
)

// ErrExportCut says the server's answer ended before the archive did.
var ErrExportCut = errors.New("the export was cut off before its end; nothing usable was written")

// errImportAnswered stops sending an archive the server has answered.
var errImportAnswered = errors.New("the server answered the import")

// archiveURL is the address of an archive endpoint beside /rpc.
func (c *Client) archiveURL(path string) string { return strings.TrimSuffix(c.url, "/rpc") + path }

func (c *Client) archiveRequest(ctx context.Context, path, mediaType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.archiveURL(path), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mediaType)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", path, err)
	}
	return resp, nil
}

// Export writes an archive of what p selects to w and returns its size. It
// fails with ErrExportCut when the server's stream ended early, so a
// caller keeps what it wrote only on success.
func (c *Client) Export(ctx context.Context, p ExportParams, w io.Writer) (int64, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	resp, err := c.archiveRequest(ctx, ExportPath, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, decodeResponse(resp, "export", nil)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("%w: %v", ErrExportCut, err)
	}
	if resp.Trailer.Get(exportStatusTrailer) != "complete" {
		return n, ErrExportCut
	}
	return n, nil
}

// Import sends the archive read from r into the server's universe. It
// reads the manifest first, asks the server which blobs it lacks
// (blobs/missing), and sends only those; newIDs gives every session a
// fresh id. An archive the client finds damaged is refused with an
// *archive.Error and the server keeps nothing of it.
func (c *Client) Import(ctx context.Context, r io.Reader, newIDs bool) (ImportResult, error) {
	ar, err := archive.NewReader(r, archive.DefaultLimits)
	if err != nil {
		return ImportResult{}, err
	}
	defer ar.Close()
	send := map[content.Digest]bool{}
	for i := 0; i < len(ar.Manifest.Blobs); i += MaxBlobsMissing {
		res, err := c.MissingBlobs(ctx, ar.Manifest.Blobs[i:min(i+MaxBlobsMissing, len(ar.Manifest.Blobs))])
		if err != nil {
			return ImportResult{}, err
		}
		for _, d := range res.Missing {
			send[d] = true
		}
	}
	pr, pw := io.Pipe()
	failed := make(chan error, 1)
	go func() {
		err := passOn(ar, pw, send)
		failed <- err
		pw.CloseWithError(err)
	}()
	path := ImportPath
	if newIDs {
		path += "?newIds=true"
	}
	resp, err := c.archiveRequest(ctx, path, ArchiveMediaType, pr)
	pr.CloseWithError(errImportAnswered) // stops the writer if the server answered early
	readErr := <-failed
	if resp != nil {
		defer resp.Body.Close()
	}
	var damaged *archive.Error
	switch {
	case errors.As(readErr, &damaged):
		return ImportResult{}, readErr // the archive's own fault comes first
	case err != nil:
		return ImportResult{}, err
	case readErr != nil && !errors.Is(readErr, errImportAnswered) && !errors.Is(readErr, io.ErrClosedPipe):
		return ImportResult{}, readErr
	}
	var out ImportResult
	return out, decodeResponse(resp, "import", &out)
}

// passOn writes the archive read by ar to w, leaving out the blobs not in
// send.
func passOn(ar *archive.Reader, w io.Writer, send map[content.Digest]bool) error {
	aw, err := archive.NewWriter(w, ar.Manifest)
	if err != nil {
		return err
	}
	for {
		e, err := ar.Next()
		if err == io.EOF {
			return aw.Close()
		}
		if err != nil {
			return err
		}
		if e.Blob != nil && !send[*e.Blob] {
			continue
		}
		if err := aw.Raw(e); err != nil {
			return err
		}
	}
}
