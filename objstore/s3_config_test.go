package objstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// These tests need no S3 server: they check what the client would send.

// presignedURL builds the store offline and asks minio-go where a GET of
// key would go, which shows the addressing style it really uses.
func presignedURL(t *testing.T, cfg S3Config, key string) string {
	t.Helper()
	cfg.AccessKeyID, cfg.SecretAccessKey = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	s, err := newS3(cfg, failingTransport{t})
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.objectKey(key)
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.client.PresignedGetObject(context.Background(), s.t.bucket, k, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u.Scheme + "://" + u.Host + u.Path
}

func TestS3AddressingStyle(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  S3Config
		want string
	}{
		{"AWS default is virtual-hosted",
			S3Config{Bucket: "my-bucket", Region: "eu-west-1"},
			"https://my-bucket.s3.eu-west-1.amazonaws.com/dir/key"},
		{"AWS forced path style",
			S3Config{Bucket: "my-bucket", Region: "eu-west-1", PathStyle: true},
			"https://s3.eu-west-1.amazonaws.com/my-bucket/dir/key"},
		{"AWS regional endpoint is virtual-hosted",
			S3Config{Endpoint: "https://s3.eu-west-1.amazonaws.com", Bucket: "my-bucket", Region: "eu-west-1"},
			"https://my-bucket.s3.eu-west-1.amazonaws.com/dir/key"},
		{"AWS dual-stack endpoint stays dual-stack",
			S3Config{Endpoint: "https://s3.dualstack.eu-west-1.amazonaws.com", Bucket: "my-bucket", Region: "eu-west-1"},
			"https://my-bucket.s3.dualstack.eu-west-1.amazonaws.com/dir/key"},
		{"AWS dotted bucket falls back to path style (TLS wildcard)",
			S3Config{Bucket: "my.bucket", Region: "eu-west-1"},
			"https://s3.eu-west-1.amazonaws.com/my.bucket/dir/key"},
		{"loopback endpoint is path style",
			S3Config{Endpoint: "http://127.0.0.1:7070", Bucket: "my-bucket", Region: "us-east-1"},
			"http://127.0.0.1:7070/my-bucket/dir/key"},
		{"custom host is path style",
			S3Config{Endpoint: "https://objects.example.com/", Bucket: "my-bucket", Region: "us-east-1"},
			"https://objects.example.com/my-bucket/dir/key"},
		{"custom host forced path style",
			S3Config{Endpoint: "https://objects.example.com", Bucket: "my-bucket", Region: "us-east-1", PathStyle: true},
			"https://objects.example.com/my-bucket/dir/key"},
		{"prefix is a folder",
			S3Config{Endpoint: "http://127.0.0.1:7070", Bucket: "bkt", Region: "us-east-1", Prefix: "tenants/a"},
			"http://127.0.0.1:7070/bkt/tenants/a/dir/key"},
		{"prefix with trailing slash",
			S3Config{Endpoint: "http://127.0.0.1:7070", Bucket: "bkt", Region: "us-east-1", Prefix: "tenants/a/"},
			"http://127.0.0.1:7070/bkt/tenants/a/dir/key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := presignedURL(t, tc.cfg, "dir/key"); got != tc.want {
				t.Errorf("GET goes to %s, want %s", got, tc.want)
			}
		})
	}
}

func TestS3ConfigRejected(t *testing.T) {
	ok := S3Config{Endpoint: "http://127.0.0.1:7070", Bucket: "bkt"}
	with := func(f func(*S3Config)) S3Config { c := ok; f(&c); return c }
	for name, cfg := range map[string]S3Config{
		"no bucket":               with(func(c *S3Config) { c.Bucket = "" }),
		"bad bucket name":         with(func(c *S3Config) { c.Bucket = "no/slash" }),
		"endpoint without scheme": with(func(c *S3Config) { c.Endpoint = "127.0.0.1:7070" }),
		"ftp endpoint":            with(func(c *S3Config) { c.Endpoint = "ftp://host" }),
		"endpoint with path":      with(func(c *S3Config) { c.Endpoint = "http://host/bucket" }),
		"endpoint with query":     with(func(c *S3Config) { c.Endpoint = "http://host/?x=1" }),
		"absolute prefix":         with(func(c *S3Config) { c.Prefix = "/p" }),
		"slash prefix":            with(func(c *S3Config) { c.Prefix = "/" }),
		"dot-dot prefix":          with(func(c *S3Config) { c.Prefix = "a/../b" }),
		"key without secret":      with(func(c *S3Config) { c.AccessKeyID = "id" }),
		"secret without key":      with(func(c *S3Config) { c.SecretAccessKey = "s" }),
		"token without keys":      with(func(c *S3Config) { c.SessionToken = "tok" }),
		"bad CAIRN_S3_PATH_STYLE": S3ConfigFromEnv(func(k string) string {
			return map[string]string{"CAIRN_S3_BUCKET": "bkt", "CAIRN_S3_PATH_STYLE": "sometimes"}[k]
		}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewS3(context.Background(), cfg)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewS3: %v, want ErrInvalidConfig", err)
			}
		})
	}
	if _, err := newS3(ok, nil); err != nil {
		t.Fatalf("the valid base config was rejected: %v", err)
	}
}

func TestS3ConfigErrorsHideEndpointPassword(t *testing.T) {
	for _, endpoint := range []string{"http://user:hunter2@host:7070", "user:hunter2@host:7070", "http://user:hunter2@[::1", "http://host/?token=hunter2"} {
		_, err := NewS3(context.Background(), S3Config{Endpoint: endpoint, Bucket: "bkt"})
		if !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("NewS3(endpoint %q): %v, want ErrInvalidConfig without the password", endpoint, err)
		}
	}
}

func TestS3ConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"CAIRN_S3_ENDPOINT":   "http://127.0.0.1:7070",
		"CAIRN_S3_BUCKET":     "cairn",
		"CAIRN_S3_REGION":     "eu-west-1",
		"CAIRN_S3_PREFIX":     "prod/",
		"CAIRN_S3_PATH_STYLE": "true",
		// Credentials are left to the AWS chain, not copied into the config.
		"AWS_ACCESS_KEY_ID":     "AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY": "secret",
	}
	got := S3ConfigFromEnv(func(k string) string { return env[k] })
	want := S3Config{Endpoint: "http://127.0.0.1:7070", Bucket: "cairn", Region: "eu-west-1", Prefix: "prod/", PathStyle: true}
	if got != want {
		t.Errorf("S3ConfigFromEnv = %v, want %v", got, want)
	}
	for v, want := range map[string]bool{"1": true, "TRUE": true, "false": false, "0": false, "": false} {
		env["CAIRN_S3_PATH_STYLE"] = v
		got := S3ConfigFromEnv(func(k string) string { return env[k] })
		if got.PathStyle != want || got.envErr != nil {
			t.Errorf("CAIRN_S3_PATH_STYLE=%q: PathStyle %t, err %v; want %t", v, got.PathStyle, got.envErr, want)
		}
	}
	env["CAIRN_S3_PATH_STYLE"] = "yes please"
	_, err := newS3(S3ConfigFromEnv(func(k string) string { return env[k] }), nil)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "CAIRN_S3_PATH_STYLE") {
		t.Errorf("bad CAIRN_S3_PATH_STYLE: %v, want ErrInvalidConfig naming the variable", err)
	}
	if got := S3ConfigFromEnv(func(string) string { return "" }); got != (S3Config{}) {
		t.Errorf("empty environment gave %v, want the zero config", got)
	}
}

func TestS3ConfigNeverPrintsSecrets(t *testing.T) {
	cfg := S3Config{Bucket: "bkt", AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "s3cr3t-value", SessionToken: "t0ken-value"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "s3", cfg)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "s3", cfg)
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{
		fmt.Sprint(cfg), fmt.Sprintf("%v", &cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg),
		logged.String(), string(js),
	} {
		if strings.Contains(out, "s3cr3t") || strings.Contains(out, "t0ken") {
			t.Errorf("a secret is printed: %s", out)
		}
		if !strings.Contains(out, "AKIDEXAMPLE") && !strings.Contains(out, "AccessKeyID") {
			t.Errorf("the access key ID, which helps debugging, is missing: %s", out)
		}
	}
}

// Invalid keys are refused before any request: the transport fails the test.
func TestS3InvalidKeysNeedNoRequest(t *testing.T) {
	cfg := S3Config{Endpoint: "http://127.0.0.1:7070", Bucket: "bkt", Region: "us-east-1",
		Prefix: strings.Repeat("p", 1000), AccessKeyID: "id", SecretAccessKey: "secret"}
	s, err := newS3(cfg, failingTransport{t})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The last key is valid alone but too long behind the prefix.
	for _, key := range []string{"", "../x", "/x", "a//b", `a\b`, ".tmp-1", strings.Repeat("k", 30)} {
		if err := s.Put(ctx, key, []byte("v")); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Put(%q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Get(%q): %v, want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Delete(%q): %v, want ErrInvalidKey", key, err)
		}
	}
}

func TestS3ErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status int
		want   error
	}{
		{"NoSuchKey", 404, ErrNotFound},
		{"NoSuchBucket", 404, ErrBucketNotFound},
		{"SignatureDoesNotMatch", 403, ErrAccessDenied},
		{"InvalidAccessKeyId", 403, ErrAccessDenied},
		{"AccessDenied", 403, ErrAccessDenied},
		{"XAdminUserNotFound", 404, ErrAccessDenied},
		{"403 Forbidden", 403, ErrAccessDenied},
		{"SlowDown", 503, nil},
	} {
		e := &S3Error{Op: "get", Bucket: "b", Key: "k", Endpoint: "http://h", Code: tc.code, StatusCode: tc.status}
		for _, sentinel := range []error{ErrNotFound, ErrBucketNotFound, ErrAccessDenied} {
			if got := errors.Is(e, sentinel); got != (sentinel == tc.want) {
				t.Errorf("%s: errors.Is(%v) = %t", tc.code, sentinel, got)
			}
		}
	}
	cause := fmt.Errorf("dial: %w", context.DeadlineExceeded)
	if e := (&S3Error{Op: "put", Err: cause}); !errors.Is(e, context.DeadlineExceeded) || errors.Is(e, ErrNotFound) {
		t.Errorf("a transport error does not unwrap: %v", e)
	}
}

// With no credentials anywhere NewS3 refuses to go on anonymously.
func TestS3NoCredentials(t *testing.T) {
	// A container-credentials endpoint on loopback that knows no role keeps
	// the chain from asking a real instance metadata service.
	metadata := httptest.NewServer(http.NotFoundHandler())
	defer metadata.Close()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_ACCESS_KEY": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SECRET_KEY": "",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_SHARED_CREDENTIALS_FILE":            t.TempDir() + "/none",
		"AWS_CONFIG_FILE":                        t.TempDir() + "/none",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI":     metadata.URL + "/creds",
	} {
		t.Setenv(k, v)
	}
	s, err := newS3(S3Config{Endpoint: "http://127.0.0.1:7070", Bucket: "bkt"}, failingTransport{t})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.open(context.Background()); !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("open: %v, want ErrNoCredentials with a hint", err)
	}
}

// failingTransport fails the test on any request to the S3 endpoint.
type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("unexpected request %s %s", r.Method, r.URL)
	return nil, errors.New("no requests expected")
}
