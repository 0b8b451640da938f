package archive

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
)

// Writer writes an archive: the manifest, then its blobs, then each
// session's events in manifest order. It holds at most one events chunk.
type Writer struct {
	zw      *zstd.Encoder
	tw      *tar.Writer
	m       *Manifest
	session int // the session whose events are buffered (-1: none yet)
	chunk   int
	next    int64 // the seq the next event of that session must have
	buf     bytes.Buffer
	closed  bool
}

// entryTime is every entry's modification time: an archive's bytes depend
// on its contents only.
var entryTime = time.Unix(0, 0).UTC()

// NewWriter starts an archive on w with m as its manifest (Format and
// Version are set here).
func NewWriter(w io.Writer, m Manifest) (*Writer, error) {
	aw, err := newWriter(w)
	if err != nil {
		return nil, err
	}
	m.Format, m.Version = Format, Version
	aw.m = &m
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := aw.entry(ManifestName, raw); err != nil {
		return nil, err
	}
	return aw, nil
}

func newWriter(w io.Writer) (*Writer, error) {
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(windowBytes))
	if err != nil {
		return nil, err
	}
	return &Writer{zw: zw, tw: tar.NewWriter(zw), session: -1}, nil
}

func (w *Writer) entry(name string, data []byte) error {
	if err := w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: 0o644, ModTime: entryTime, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := w.tw.Write(data)
	return err
}

// Blob writes the blob d, whose bytes are data (as a blob store's Get
// verified them; a reader checks again); blobs go before any events.
func (w *Writer) Blob(d content.Digest, data []byte) error {
	if w.session >= 0 {
		return fmt.Errorf("archive: a blob after events")
	}
	if len(data) > MaxBlobBytes {
		return fmt.Errorf("archive: blob %s is %d bytes, over the archive's %d", d, len(data), MaxBlobBytes)
	}
	return w.entry(blobName(d), data)
}

// Events writes events of the manifest's session i, in order from its
// first event to its head, across as many calls as the caller likes.
func (w *Writer) Events(i int, evs []core.Event) error {
	if i != w.session {
		if err := w.endSession(); err != nil {
			return err
		}
		if i <= w.session || i >= len(w.m.Sessions) {
			return fmt.Errorf("archive: events of session %d out of order", i)
		}
		if err := w.emptyUpTo(i); err != nil {
			return err
		}
		w.session, w.chunk, w.next = i, 0, w.m.Sessions[i].First()
	}
	s := w.m.Sessions[i]
	for _, ev := range evs {
		if ev.Seq != w.next || ev.Seq > s.Head {
			return fmt.Errorf("archive: session %s: event %d where %d (at most %d) was due", s.ID, ev.Seq, w.next, s.Head)
		}
		if err := appendEventLine(&w.buf, ev); err != nil {
			return fmt.Errorf("archive: session %s: %w", s.ID, err)
		}
		w.next++
		if w.buf.Len() >= EventsChunkBytes {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *Writer) flush() error {
	if w.buf.Len() == 0 {
		return nil
	}
	err := w.entry(eventsName(w.session, w.chunk), w.buf.Bytes())
	w.buf.Reset()
	w.chunk++
	return err
}

// endSession writes the buffered session's last chunk and checks it reached
// its head.
func (w *Writer) endSession() error {
	if w.session < 0 {
		return nil
	}
	if err := w.flush(); err != nil {
		return err
	}
	if s := w.m.Sessions[w.session]; w.next != s.Head+1 {
		return fmt.Errorf("archive: session %s: events end at %d, before its head %d", s.ID, w.next-1, s.Head)
	}
	return nil
}

// emptyUpTo checks that the sessions between the one written last and i
// have no events (those have no entry).
func (w *Writer) emptyUpTo(i int) error {
	for j := w.session + 1; j < i; j++ {
		if !w.m.Sessions[j].Empty() {
			return fmt.Errorf("archive: session %s has no events written", w.m.Sessions[j].ID)
		}
	}
	return nil
}

// Raw writes an entry as a reader returned it (an import passing an
// archive on).
func (w *Writer) Raw(e Entry) error {
	switch {
	case e.Blob != nil:
		if w.session >= 0 {
			return fmt.Errorf("archive: a blob after events")
		}
	case e.Events != nil:
		if e.Session != w.session {
			if err := w.endSession(); err != nil {
				return err
			}
			if err := w.emptyUpTo(e.Session); err != nil {
				return err
			}
		}
		w.session, w.chunk = e.Session, e.Chunk+1
		w.next = e.Events[len(e.Events)-1].Seq + 1
	}
	return w.entry(e.Name, e.Data)
}

// Close ends the archive. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.endSession(); err != nil {
		return err
	}
	if err := w.emptyUpTo(len(w.m.Sessions)); err != nil {
		return err
	}
	if err := w.tw.Close(); err != nil {
		return err
	}
	return w.zw.Close()
}
