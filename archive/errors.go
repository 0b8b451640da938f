package archive

import "fmt"

// Kinds of Error: what failed, in the API's words.
const (
	// KindInvalid: an entry or the manifest is not what the format says.
	KindInvalid = "archive_invalid"
	// KindVersion: the archive is of a newer major version.
	KindVersion = "archive_version_unsupported"
	// KindTruncated: the stream ended before the archive did.
	KindTruncated = "archive_truncated"
	// KindTooLarge: the manifest, an entry or the entry count is over its
	// limit.
	KindTooLarge = "archive_too_large"
	// KindBlobMismatch: a blob's bytes do not hash to its name.
	KindBlobMismatch = "archive_blob_mismatch"
	// KindBlobMissing: a blob the archive needs is neither in it nor in
	// the target.
	KindBlobMissing = "archive_blob_missing"
	// KindEventsGap: a session's events skip or repeat a seq, or stop
	// before its head.
	KindEventsGap = "archive_events_gap"
)

// Error is a refused archive: its kind, the entry that failed (a tar name,
// or empty for the stream as a whole) and why.
type Error struct {
	Kind    string
	Entry   string
	Message string
}

// Error is the kind and the detail, as the CLI prints an API error.
func (e *Error) Error() string { return e.Kind + ": " + e.Detail() }

// Detail names the entry that failed, if any, and why.
func (e *Error) Detail() string {
	if e.Entry == "" {
		return e.Message
	}
	return fmt.Sprintf("entry %s: %s", e.Entry, e.Message)
}

func invalid(entry, msg string) *Error { return &Error{Kind: KindInvalid, Entry: entry, Message: msg} }
