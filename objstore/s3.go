package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 stores objects in an S3-compatible bucket under an optional key
// prefix. Each Put is one PUT (multipart above 16 MiB, which minio-go
// aborts on failure), so objects appear whole or not at all, and S3 itself
// gives the last-writer-wins overwrite the Store contract asks for.
type S3 struct {
	client *minio.Client
	creds  *credentials.Credentials
	t      s3Target
}

var _ Store = (*S3)(nil)

// NewS3 connects to the bucket cfg names. It fails, matching
// ErrInvalidConfig, ErrNoCredentials, ErrBucketNotFound or ErrAccessDenied,
// rather than return a store whose first write would fail.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	s, err := newS3(cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// newS3 builds the store without contacting the service. transport is nil
// except in tests.
func newS3(cfg S3Config, transport http.RoundTripper) (*S3, error) {
	t, err := cfg.target()
	if err != nil {
		return nil, err
	}
	creds := credentialsFor(cfg)
	client, err := minio.New(t.host, &minio.Options{
		Creds:        creds,
		Secure:       t.secure,
		Region:       cfg.Region,
		BucketLookup: t.lookup,
		Transport:    transport,
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: %w: endpoint %s: %v", ErrInvalidConfig, t.endpoint, err)
	}
	// minio-go sends AWS requests to the dual-stack host unless told not to;
	// keep to the regional host the AWS SDKs use, which egress rules name,
	// unless the configured endpoint is itself dual-stack.
	client.SetS3EnableDualstack(strings.Contains(t.host, ".dualstack."))
	return &S3{client: client, creds: creds, t: t}, nil
}

// open resolves the credentials and lists one key under the prefix. A
// listing, unlike HEAD bucket, answers with an error code, so a missing
// bucket and an unknown access key cannot be confused (versitygw answers
// both with a bare 404 to HEAD). It needs s3:ListBucket, which the store
// needs anyway for reads of absent keys to report ErrNotFound.
func (s *S3) open(ctx context.Context) error {
	cc := s.client.CredContext()
	cc.Context = ctx
	v, err := s.creds.GetWithContext(cc)
	if err != nil {
		return fmt.Errorf("objstore: s3 credentials: %w", err)
	}
	if v.SignerType.IsAnonymous() {
		return fmt.Errorf("objstore: s3 bucket %q at %s: %w (%s)", s.t.bucket, s.t.endpoint, ErrNoCredentials, credentialsHint)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the lister after its first answer
	for obj := range s.client.ListObjectsIter(ctx, s.t.bucket, minio.ListObjectsOptions{Prefix: s.t.prefix, MaxKeys: 1}) {
		if obj.Err != nil {
			return s.s3Error("open", s.t.prefix, obj.Err)
		}
		break
	}
	return nil
}

// objectKey validates key, before any request, and adds the prefix.
func (s *S3) objectKey(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	full := s.t.prefix + key
	if len(full) > maxKeyLen {
		return "", fmt.Errorf("%w %q: too long with the prefix %q", ErrInvalidKey, key, s.t.prefix)
	}
	return full, nil
}

// Put uploads data from memory, so minio-go knows the size and can retry
// and sign the body.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	info, err := s.client.PutObject(ctx, s.t.bucket, k, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return s.s3Error("put", k, err)
	}
	if info.Size != int64(len(data)) {
		return s.s3Error("put", k, fmt.Errorf("stored %d bytes of %d", info.Size, len(data)))
	}
	return nil
}

// Get reads the whole object with one GET.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	// Core.GetObject reports a missing key at once, where Client.GetObject
	// defers the request to the first Read.
	body, info, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.t.bucket, k, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.s3Error("get", k, err)
	}
	defer body.Close()
	data, err := readBody(body, info.Size)
	if err != nil {
		return nil, s.s3Error("get", k, err)
	}
	return data, nil
}

// maxPrealloc bounds the allocation a Content-Length can cause up front.
const maxPrealloc = 1 << 30

// readBody reads exactly size bytes into one allocation, or everything
// when the size is unknown (-1) or implausible.
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size < 0 || size > maxPrealloc {
		return io.ReadAll(r)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("read body of %d bytes: %w", size, err)
	}
	if n, _ := r.Read(make([]byte, 1)); n > 0 {
		return nil, fmt.Errorf("body is longer than its %d-byte Content-Length", size)
	}
	return data, nil
}

// Delete removes the object. S3 answers success for an absent key; a
// NoSuchKey from a stricter service is success too.
func (s *S3) Delete(ctx context.Context, key string) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	err = s.client.RemoveObject(ctx, s.t.bucket, k, minio.RemoveObjectOptions{})
	if err != nil {
		if err = s.s3Error("delete", k, err); !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}
