package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"testing"
	"time"
)

// S3 describes the S3-compatible server tests use (versitygw, started by
// ./scripts/test). Each test gets its own key prefix in the shared bucket.
type S3 struct {
	Endpoint  string // e.g. http://127.0.0.1:7070
	Bucket    string
	AccessKey string
	SecretKey string
	Region    string
	Prefix    string // unique per test, ends in "/"
}

// S3Server returns the test S3 server from CAIRN_TEST_S3_ENDPOINT,
// CAIRN_TEST_S3_BUCKET, CAIRN_TEST_S3_ACCESS_KEY and CAIRN_TEST_S3_SECRET_KEY,
// after checking that it accepts connections.
func S3Server(t testing.TB) S3 {
	t.Helper()
	s := S3{
		Endpoint:  os.Getenv("CAIRN_TEST_S3_ENDPOINT"),
		Bucket:    os.Getenv("CAIRN_TEST_S3_BUCKET"),
		AccessKey: os.Getenv("CAIRN_TEST_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("CAIRN_TEST_S3_SECRET_KEY"),
		Region:    "us-east-1",
	}
	if s.Endpoint == "" || s.Bucket == "" {
		missing(t, "S3 server: CAIRN_TEST_S3_ENDPOINT and CAIRN_TEST_S3_BUCKET are not set")
		return S3{}
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatalf("CAIRN_TEST_S3_ENDPOINT: %v", err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		missing(t, "S3 server at %s: %v", s.Endpoint, err)
		return S3{}
	}
	conn.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	s.Prefix = "t-" + hex.EncodeToString(b[:]) + "/"
	return s
}
