package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/content"
)

// jsonLike is compressible bytes of n length, as checkpoint chunks are.
func jsonLike(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"entryId":"e%d","kind":"message","role":"user","preview":"a short message"},`, i)
	}
	return b.Bytes()[:n]
}

func readEncoding(t *testing.T, s *Store, d content.Digest) sql.NullString {
	t.Helper()
	var enc sql.NullString
	if err := s.reader.QueryRowContext(context.Background(), `SELECT encoding FROM blobs WHERE universe = ? AND digest = ?`,
		s.universe, d.String()).Scan(&enc); err != nil {
		t.Fatal(err)
	}
	return enc
}

func TestInlineBlobsAreStoredCompressedWhenThatSaves(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	for _, tc := range []struct {
		name       string
		data       []byte
		compressed bool
	}{
		{"compressible", jsonLike(20_000), true},
		{"largest inline", jsonLike(InlineMax), true},
		{"random", blobtest.Bytes(3, 20_000), false},
		{"too small to try", jsonLike(compressMin - 1), false},
		{"empty", []byte{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustPut(t, s, tc.data)
			row := readRow(t, s, d)
			enc := readEncoding(t, s, d)
			if tc.compressed {
				if enc.String != encodingZstd || len(row.inline) >= len(tc.data)/2 {
					t.Fatalf("stored %d of %d bytes with encoding %q, want a zstd frame under half the size", len(row.inline), len(tc.data), enc.String)
				}
			} else if enc.Valid || !bytes.Equal(row.inline, tc.data) {
				t.Fatalf("stored %d of %d bytes with encoding %q, want the bytes as they are", len(row.inline), len(tc.data), enc.String)
			}
			got, err := s.Get(ctx, d)
			if err != nil || !bytes.Equal(got, tc.data) {
				t.Fatalf("Get = %d bytes, %v; want the %d bytes put", len(got), err, len(tc.data))
			}
			u, err := s.Usage(ctx)
			if err != nil || u.Bytes < int64(len(tc.data)) {
				t.Fatalf("Usage = %+v, %v: it counts the blobs' own sizes", u, err)
			}
		})
	}
}

func TestCompressedRowsThatAreDamagedAreCorrupt(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	data := jsonLike(10_000)
	d := mustPut(t, s, data)
	frame := readRow(t, s, d).inline
	other := zstdEncoder.EncodeAll(jsonLike(10_001)[1:], nil) // decodes, to other bytes
	for name, damage := range map[string]func() error{
		"flipped byte": func() error {
			b := bytes.Clone(frame)
			b[len(b)/2] ^= 0xff
			_, err := s.writes.ExecContext(ctx, `UPDATE blobs SET inline = ? WHERE digest = ?`, b, d.String())
			return err
		},
		"truncated frame": func() error {
			_, err := s.writes.ExecContext(ctx, `UPDATE blobs SET inline = ? WHERE digest = ?`, frame[:len(frame)/2], d.String())
			return err
		},
		"another blob's frame": func() error {
			_, err := s.writes.ExecContext(ctx, `UPDATE blobs SET inline = ? WHERE digest = ?`, other, d.String())
			return err
		},
		"unknown encoding": func() error {
			_, err := s.writes.ExecContext(ctx, `UPDATE blobs SET inline = ?, encoding = 'lz9' WHERE digest = ?`, frame, d.String())
			return err
		},
		"raw bytes marked compressed": func() error {
			_, err := s.writes.ExecContext(ctx, `UPDATE blobs SET inline = ?, encoding = 'zstd' WHERE digest = ?`, data, d.String())
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := damage(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, d); !errors.Is(err, blob.ErrCorrupt) {
				t.Fatalf("Get = %v, want ErrCorrupt", err)
			}
			// Restore the row for the next case.
			if _, err := s.writes.ExecContext(ctx, `UPDATE blobs SET inline = ?, encoding = 'zstd' WHERE digest = ?`, frame, d.String()); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, d); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Get after restoring = %v", err)
			}
		})
	}
}

// A frame that claims more than an inline blob can hold is refused before
// it is decoded, whatever its row says.
func TestCompressedRowsCannotInflatePastTheInlineLimit(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	d := mustPut(t, s, jsonLike(10_000))
	bomb := zstdEncoder.EncodeAll(make([]byte, InlineMax), nil)
	bomb = append(bomb, zstdEncoder.EncodeAll(make([]byte, InlineMax), nil)...) // two frames: 128 KiB
	if _, err := s.writes.ExecContext(ctx, `UPDATE blobs SET inline = ?, size = ? WHERE digest = ?`, bomb, 2*InlineMax, d.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, d); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Get = %v, want ErrCorrupt", err)
	}
}

// TestVersion7DatabaseGainsBlobEncoding reopens a database as the release
// before compression left it: its blobs read as they were, and new ones
// are compressed.
func TestVersion7DatabaseGainsBlobEncoding(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	old := jsonLike(5_000)
	d := content.Sum(old)
	for _, q := range []string{
		`ALTER TABLE events DROP COLUMN encoding`, `ALTER TABLE blobs DROP COLUMN encoding`,
		`DELETE FROM schema_migrations WHERE version >= 8`,
	} {
		if _, err := s.writes.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.writes.ExecContext(ctx, `INSERT INTO blobs (universe, digest, size, inline, created_at_ms, touched_at_ms)
		VALUES (?, ?, ?, ?, 0, 0)`, s.universe, d.String(), len(old), old); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	if got, err := s.Get(ctx, d); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("Get of a blob stored before compression: %v", err)
	}
	if enc := readEncoding(t, s, mustPut(t, s, jsonLike(5_001))); enc.String != encodingZstd {
		t.Fatalf("a new blob after the upgrade has encoding %q, want %q", enc.String, encodingZstd)
	}
}
