package objstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/cairn-agents/cairn/internal/testenv"
	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/objstore/objstoretest"
)

// These tests run against the real S3 server ./scripts/test starts
// (versitygw); each store gets its own prefix in the shared bucket.

func s3Config(srv testenv.S3) objstore.S3Config {
	return objstore.S3Config{
		Endpoint: srv.Endpoint, Bucket: srv.Bucket, Region: srv.Region, Prefix: srv.Prefix,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
	}
}

func newS3(t *testing.T) *objstore.S3 {
	t.Helper()
	srv := testenv.S3Server(t)
	s, err := objstore.NewS3(t.Context(), s3Config(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePrefix(t, srv) })
	return s
}

// removePrefix deletes what a test left, in case the bucket outlives the
// test server (a developer's own endpoint).
func removePrefix(t *testing.T, srv testenv.S3) {
	c := rawClient(t, srv)
	ctx := context.Background()
	objects := c.ListObjects(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: srv.Prefix, Recursive: true})
	for res := range c.RemoveObjects(ctx, srv.Bucket, objects, minio.RemoveObjectsOptions{}) {
		t.Logf("cleanup: %v", res.Err)
	}
}

// rawClient looks at the bucket directly, under the store.
func rawClient(t *testing.T, srv testenv.S3) *minio.Client {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimPrefix(srv.Endpoint, "http://"), "https://")
	c, err := minio.New(host, &minio.Options{
		Creds:  credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Secure: strings.HasPrefix(srv.Endpoint, "https://"),
		Region: srv.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestS3Conformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store { return newS3(t) })
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func TestS3WrongCredentials(t *testing.T) {
	srv := testenv.S3Server(t)
	wrong := "wrong-secret-" + randomSuffix()
	for name, cfg := range map[string]objstore.S3Config{
		"wrong secret":       {AccessKeyID: srv.AccessKey, SecretAccessKey: wrong},
		"unknown access key": {AccessKeyID: "unknown-" + randomSuffix(), SecretAccessKey: wrong},
		"wrong session":      {AccessKeyID: srv.AccessKey, SecretAccessKey: wrong, SessionToken: "token-" + wrong},
	} {
		t.Run(name, func(t *testing.T) {
			good := s3Config(srv)
			good.AccessKeyID, good.SecretAccessKey, good.SessionToken = cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken
			s, err := objstore.NewS3(t.Context(), good)
			if err == nil {
				t.Fatalf("NewS3 accepted wrong credentials: %v", s)
			}
			if !errors.Is(err, objstore.ErrAccessDenied) {
				t.Errorf("NewS3: %v, want ErrAccessDenied", err)
			}
			msg := err.Error()
			for _, secret := range []string{wrong, srv.SecretKey} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error shows a secret: %s", msg)
				}
			}
			for _, want := range []string{srv.Bucket, srv.Endpoint, "AWS_ACCESS_KEY_ID"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error does not name %q: %s", want, msg)
				}
			}
		})
	}
}

func TestS3MissingBucket(t *testing.T) {
	srv := testenv.S3Server(t)
	cfg := s3Config(srv)
	cfg.Bucket = "cairn-missing-" + randomSuffix()
	_, err := objstore.NewS3(t.Context(), cfg)
	if !errors.Is(err, objstore.ErrBucketNotFound) {
		t.Fatalf("NewS3: %v, want ErrBucketNotFound", err)
	}
	if errors.Is(err, objstore.ErrAccessDenied) || errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("the error also claims another cause: %v", err)
	}
	for _, want := range []string{cfg.Bucket, srv.Endpoint} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q: %v", want, err)
		}
	}
	var s3err *objstore.S3Error
	if !errors.As(err, &s3err) || s3err.Code != "NoSuchBucket" {
		t.Errorf("error %#v, want an *S3Error with code NoSuchBucket", err)
	}
}

func TestS3UnreachableEndpoint(t *testing.T) {
	// The deadline only guards: minio-go retries refused connections.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := objstore.NewS3(ctx, objstore.S3Config{
		Endpoint: "http://127.0.0.1:1", Bucket: "cairn-test",
		AccessKeyID: "id", SecretAccessKey: "unreachable-secret",
	})
	if err == nil || errors.Is(err, objstore.ErrAccessDenied) || errors.Is(err, objstore.ErrBucketNotFound) {
		t.Fatalf("NewS3 against a closed port: %v, want a connection error", err)
	}
	if strings.Contains(err.Error(), "unreachable-secret") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error: %v", err)
	}
}

// The prefix really is a folder in the bucket, and stores with different
// prefixes do not see each other's keys.
func TestS3PrefixIsolation(t *testing.T) {
	srv := testenv.S3Server(t)
	t.Cleanup(func() { removePrefix(t, srv) })
	ctx := t.Context()
	open := func(prefix string) *objstore.S3 {
		cfg := s3Config(srv)
		cfg.Prefix = prefix
		s, err := objstore.NewS3(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open(srv.Prefix+"a"), open(srv.Prefix+"b/")
	if err := a.Put(ctx, "k/1", []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "k/1"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("store b sees store a's key: %v", err)
	}
	if err := b.Delete(ctx, "k/1"); err != nil {
		t.Fatal(err)
	}
	obj, err := rawClient(t, srv).GetObject(ctx, srv.Bucket, srv.Prefix+"a/k/1", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	buf := make([]byte, 16)
	n, _ := obj.Read(buf)
	if string(buf[:n]) != "from a" {
		t.Errorf("object at %sa/k/1 holds %q, want %q", srv.Prefix, buf[:n], "from a")
	}
}

// With no credentials in the config, the AWS chain finds them in the
// environment, then in the shared credentials file.
func TestS3CredentialsFromAWSChain(t *testing.T) {
	srv := testenv.S3Server(t)
	t.Cleanup(func() { removePrefix(t, srv) })
	cfg := s3Config(srv)
	cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
	for _, k := range []string{"AWS_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "")
	}
	roundTrip := func(t *testing.T) {
		t.Helper()
		s, err := objstore.NewS3(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(t.Context(), "chain/"+t.Name(), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("environment", func(t *testing.T) {
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
		t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
		roundTrip(t)
	})
	t.Run("profile", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "credentials")
		ini := "[default]\naws_access_key_id = nobody\naws_secret_access_key = wrong\n\n" +
			"[cairn]\naws_access_key_id = " + srv.AccessKey + "\naws_secret_access_key = " + srv.SecretKey + "\n"
		if err := os.WriteFile(file, []byte(ini), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
		t.Setenv("AWS_PROFILE", "cairn")
		roundTrip(t)
	})
}
