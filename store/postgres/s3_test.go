package postgres_test

import (
	"context"
	"testing"

	"github.com/cairn-agents/cairn/blob"
	"github.com/cairn-agents/cairn/blob/blobtest"
	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/store"
	"github.com/cairn-agents/cairn/store/storetest"
)

// s3Objects is object storage on the real S3-compatible test server, under a
// prefix of its own.
func s3Objects(t *testing.T) *objstore.S3 {
	t.Helper()
	srv := testenv.S3Server(t)
	s3, err := objstore.NewS3(context.Background(), objstore.S3Config{
		Endpoint: srv.Endpoint, Bucket: srv.Bucket, Region: srv.Region, Prefix: srv.Prefix,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s3
}

// The hosted deployment: PostgreSQL for the catalog and small blobs, S3 for
// blobs over 64 KiB. Both suites pass on it as on every other backend.
func TestSessionLogConformanceWithS3(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := newStore(t, s3Objects(t))
		return s, s
	})
}

func TestBlobConformanceWithS3(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return newStore(t, s3Objects(t)) })
}

// A blob over 64 KiB lands in S3 under a per-upload key, and reads back verified.
func TestLargeBlobRoundTripsThroughS3(t *testing.T) {
	s := newStore(t, s3Objects(t))
	data := blobtest.Bytes(7, 1<<20+3)
	d := mustPut(t, s, data)
	mustGet(t, s, d, data)
}

// The collector's guarantees hold where they matter most: PostgreSQL with
// S3, where a row's delete and its object's are two steps.
func TestRetentionConformanceWithS3(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := newStore(t, s3Objects(t))
		return s, s
	})
}

func TestRetentionRaceWithS3(t *testing.T) {
	storetest.RunRetentionRace(t, func(t *testing.T) (store.SessionLog, blob.Store) {
		s := newStore(t, s3Objects(t))
		return s, s
	})
}
