package archive

import (
	"strconv"
	"strings"

	"github.com/cairn-agents/cairn/content"
)

// Entry names. They name entries of the stream only: nothing ever opens
// them as filesystem paths, and a reader accepts exactly these forms.
const (
	// ManifestName is the first entry.
	ManifestName = "manifest.json"
	blobPrefix   = "blobs/"
	eventsPrefix = "sessions/"
)

// blobName is a blob's entry: "blobs/<64 lowercase hex>".
func blobName(d content.Digest) string { return blobPrefix + d.Hex() }

// eventsName is a chunk of the session at index i of the manifest:
// "sessions/<i>/events-<chunk>.jsonl".
func eventsName(i, chunk int) string {
	return eventsPrefix + strconv.Itoa(i) + "/events-" + strconv.Itoa(chunk) + ".jsonl"
}

// parseBlobName returns the digest of a blob entry's name.
func parseBlobName(name string) (content.Digest, bool) {
	hex, ok := strings.CutPrefix(name, blobPrefix)
	if !ok {
		return content.Digest{}, false
	}
	d, err := content.ParseDigest("sha256:" + hex)
	return d, err == nil && blobName(d) == name
}

// parseEventsName returns the session index and chunk of an events
// entry's name; only the canonical form (no sign, no leading zeros) is one.
func parseEventsName(name string) (session, chunk int, ok bool) {
	rest, ok := strings.CutPrefix(name, eventsPrefix)
	if !ok {
		return 0, 0, false
	}
	si, file, ok := strings.Cut(rest, "/events-")
	ci, ok2 := strings.CutSuffix(file, ".jsonl")
	if !ok || !ok2 {
		return 0, 0, false
	}
	s, err1 := strconv.Atoi(si)
	c, err2 := strconv.Atoi(ci)
	if err1 != nil || err2 != nil || s < 0 || c < 0 || eventsName(s, c) != name {
		return 0, 0, false
	}
	return s, c, true
}
