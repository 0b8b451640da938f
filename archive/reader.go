package archive

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// Entry is one entry after the manifest: a blob, verified against its
// name, or a chunk of a session's events, in order and without a gap.
type Entry struct {
	Name string
	// Data is the entry's bytes as stored, valid until the next call of
	// Next (the reader reuses its buffer).
	Data []byte
	// Blob is the digest of a blob entry (nil for events).
	Blob *content.Digest
	// Session and Chunk place an events entry: the manifest's session
	// index, and the chunk's place among that session's entries.
	Session, Chunk int
	Events         []core.Event
}

// Reader reads an archive as untrusted input. NewReader reads and checks
// the manifest; Next returns each later entry once it has been checked:
// its name and kind, its size against the limits, a blob's digest, the
// events' order. Next reports io.EOF only for an archive whose every
// session reached its head; a stream that ends early is KindTruncated.
// Blobs of the manifest that the stream leaves out are the caller's to
// find.
type Reader struct {
	zr       *zstd.Decoder
	tr       *tar.Reader
	lim      Limits
	Manifest Manifest
	entries  int64
	maxEntry int64
	lastBlob *content.Digest
	session  int   // the session whose events are being read (-1: none yet)
	chunk    int   // the next chunk of that session
	next     int64 // the next seq of that session
	done     bool
	buf      []byte
}

// NewReader reads an archive's manifest from r.
func NewReader(r io.Reader, lim Limits) (*Reader, error) {
	zr, err := zstd.NewReader(r, zstd.WithDecoderMaxWindow(windowBytes), zstd.WithDecoderConcurrency(2))
	if err != nil {
		return nil, err
	}
	ar := &Reader{zr: zr, tr: tar.NewReader(zr), lim: lim, session: -1}
	h, err := ar.first()
	if err != nil {
		zr.Close()
		return nil, err
	}
	if h.Name != ManifestName {
		zr.Close()
		return nil, invalid(h.Name, "the first entry must be "+ManifestName)
	}
	data, err := ar.body(h, lim.ManifestBytes)
	if err == nil {
		if err = json.Unmarshal(data, &ar.Manifest); err != nil {
			err = invalid(ManifestName, "not a manifest: "+err.Error())
		}
	}
	if err == nil {
		err = ar.Manifest.validate()
	}
	if err != nil {
		zr.Close()
		return nil, err
	}
	// Each entry is the manifest, a blob, or at least one event.
	ar.maxEntry = 1 + int64(len(ar.Manifest.Blobs))
	for _, s := range ar.Manifest.Sessions {
		ar.maxEntry += s.Head - s.First() + 1
	}
	ar.maxEntry = min(ar.maxEntry, lim.Entries)
	return ar, nil
}

// first reads the first entry's header: a stream that is no zstd tar at
// all is not an archive, one that ends early is a truncated one.
func (r *Reader) first() (*tar.Header, error) {
	h, err := r.tr.Next()
	switch {
	case err == io.EOF:
		return nil, &Error{Kind: KindTruncated, Message: "the stream holds no entry"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, truncated(err)
	case err != nil:
		return nil, invalid("", "this is not a Cairn archive (a zstd-compressed tar stream that starts with "+ManifestName+")")
	}
	r.entries++
	if h.Typeflag != tar.TypeReg {
		return nil, invalid(h.Name, "not a regular file entry")
	}
	return h, nil
}

// Close releases the decoder.
func (r *Reader) Close() { r.zr.Close() }

// header reads the next tar header, counting it against the entry limit.
func (r *Reader) header() (*tar.Header, error) {
	h, err := r.tr.Next()
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		return nil, truncated(err)
	}
	r.entries++
	if r.maxEntry > 0 && r.entries > r.maxEntry {
		return nil, &Error{Kind: KindTooLarge, Entry: h.Name, Message: fmt.Sprintf("more than the %d entries the manifest accounts for", r.maxEntry)}
	}
	if h.Typeflag != tar.TypeReg {
		return nil, invalid(h.Name, "not a regular file entry")
	}
	return h, nil
}

// body reads an entry of at most limit bytes.
func (r *Reader) body(h *tar.Header, limit int64) ([]byte, error) {
	if h.Size < 0 || h.Size > limit {
		return nil, &Error{Kind: KindTooLarge, Entry: h.Name, Message: fmt.Sprintf("%d bytes, over the limit of %d", h.Size, limit)}
	}
	// One buffer serves every entry: an import's memory is its largest
	// entry, not the garbage of all of them.
	if int64(cap(r.buf)) < h.Size {
		r.buf = make([]byte, h.Size)
	}
	data := r.buf[:h.Size]
	if _, err := io.ReadFull(r.tr, data); err != nil {
		return nil, truncatedIn(h.Name, err)
	}
	return data, nil
}

func truncated(err error) error { return truncatedIn("", err) }

func truncatedIn(entry string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &Error{Kind: KindTruncated, Entry: entry, Message: "the stream ended inside the archive"}
	}
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	// A damaged compressed stream or tar header: the archive is not whole.
	return &Error{Kind: KindTruncated, Entry: entry, Message: "the stream is damaged: " + err.Error()}
}

// Next returns the next entry, or io.EOF after a complete archive.
func (r *Reader) Next() (Entry, error) {
	if r.done {
		return Entry{}, io.EOF
	}
	h, err := r.header()
	if err == io.EOF {
		if err := r.complete(); err != nil {
			return Entry{}, err
		}
		r.done = true
		return Entry{}, io.EOF
	}
	if err != nil {
		return Entry{}, err
	}
	if d, ok := parseBlobName(h.Name); ok {
		return r.blob(h, d)
	}
	if s, c, ok := parseEventsName(h.Name); ok {
		return r.events(h, s, c)
	}
	return Entry{}, invalid(h.Name, "not an entry of this format")
}

func (r *Reader) blob(h *tar.Header, d content.Digest) (Entry, error) {
	if r.session >= 0 {
		return Entry{}, invalid(h.Name, "a blob after events")
	}
	if r.lastBlob != nil && compareDigests(*r.lastBlob, d) >= 0 {
		return Entry{}, invalid(h.Name, "blobs are not in digest order, or one repeats")
	}
	if !r.Manifest.Holds(d) {
		return Entry{}, invalid(h.Name, "a blob the manifest does not list")
	}
	data, err := r.body(h, r.lim.BlobBytes)
	if err != nil {
		return Entry{}, err
	}
	if content.Sum(data) != d {
		return Entry{}, &Error{Kind: KindBlobMismatch, Entry: h.Name, Message: "its bytes hash to " + content.Sum(data).String()}
	}
	r.lastBlob = &d
	return Entry{Name: h.Name, Data: data, Blob: &d}, nil
}

func (r *Reader) events(h *tar.Header, session, chunk int) (Entry, error) {
	if session != r.session {
		if err := r.endSession(h.Name); err != nil {
			return Entry{}, err
		}
		if session <= r.session || session >= len(r.Manifest.Sessions) {
			return Entry{}, invalid(h.Name, "events of a session out of the manifest's order")
		}
		if err := r.emptyUpTo(h.Name, session); err != nil {
			return Entry{}, err
		}
		r.session, r.chunk, r.next = session, 0, r.Manifest.Sessions[session].First()
	}
	if chunk != r.chunk {
		return Entry{}, invalid(h.Name, fmt.Sprintf("chunk %d where %d was due", chunk, r.chunk))
	}
	data, err := r.body(h, r.lim.EventsBytes)
	if err != nil {
		return Entry{}, err
	}
	evs, err := decodeEvents(h.Name, data)
	if err != nil {
		return Entry{}, err
	}
	s := r.Manifest.Sessions[session]
	for _, ev := range evs {
		if ev.Seq != r.next || ev.Seq > s.Head {
			return Entry{}, &Error{Kind: KindEventsGap, Entry: h.Name, Message: fmt.Sprintf(
				"session %s: event %d where %d was due (head %d)", s.ID, ev.Seq, r.next, s.Head)}
		}
		r.next++
	}
	r.chunk++
	return Entry{Name: h.Name, Data: data, Session: session, Chunk: chunk, Events: evs}, nil
}

// endSession checks the session being read reached its head.
func (r *Reader) endSession(entry string) error {
	if r.session < 0 {
		return nil
	}
	if s := r.Manifest.Sessions[r.session]; r.next != s.Head+1 {
		return &Error{Kind: KindEventsGap, Entry: entry, Message: fmt.Sprintf(
			"session %s: events stop at %d, before its head %d", s.ID, r.next-1, s.Head)}
	}
	return nil
}

// emptyUpTo checks that the sessions between the one read last and i hold
// no events: the stream skipped them.
func (r *Reader) emptyUpTo(entry string, i int) error {
	for j := r.session + 1; j < i; j++ {
		if s := r.Manifest.Sessions[j]; !s.Empty() {
			return &Error{Kind: KindEventsGap, Entry: entry, Message: fmt.Sprintf("session %s's events are missing", s.ID)}
		}
	}
	return nil
}

// complete checks, at the end of the stream, that every session's events
// came in full.
func (r *Reader) complete() error {
	if r.session >= 0 {
		if s := r.Manifest.Sessions[r.session]; r.next != s.Head+1 {
			return &Error{Kind: KindTruncated, Message: fmt.Sprintf("the stream ended before session %s's events reached its head %d", s.ID, s.Head)}
		}
	}
	for j := r.session + 1; j < len(r.Manifest.Sessions); j++ {
		if s := r.Manifest.Sessions[j]; !s.Empty() {
			return &Error{Kind: KindTruncated, Message: fmt.Sprintf("the stream ended before session %s's events reached its head %d", s.ID, s.Head)}
		}
	}
	return nil
}
