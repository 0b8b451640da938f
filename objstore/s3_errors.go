package objstore

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
)

// ErrBucketNotFound is matched by the error for a bucket that does not exist.
var ErrBucketNotFound = errors.New("bucket not found")

// ErrAccessDenied is matched by the error for rejected credentials or a
// missing permission. AWS also answers a read of an absent key this way,
// instead of NoSuchKey, when the credentials lack s3:ListBucket; the S3
// backend needs that permission for ErrNotFound to work.
var ErrAccessDenied = errors.New("access denied")

// S3Error is a failed S3 request. By its code it matches ErrNotFound,
// ErrBucketNotFound or ErrAccessDenied; Err is the client's error, so
// context and network errors still match errors.Is. It never holds secrets:
// requests carry only a signature, and S3 answers with a code and message.
type S3Error struct {
	Op         string // "open", "put", "get" or "delete"
	Endpoint   string // scheme://host of the service
	Bucket     string
	Key        string // the object key in the bucket, prefix included; the prefix for Op "open"
	Code       string // the S3 error code, e.g. "NoSuchKey"; empty when no answer came
	Message    string // the service's description of Code
	StatusCode int    // the HTTP status; 0 when no answer came
	Err        error
}

func (e *S3Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "objstore: s3 %s s3://%s/%s at %s: ", e.Op, e.Bucket, e.Key, e.Endpoint)
	switch {
	case e.Code != "":
		b.WriteString(e.Code)
		if e.Message != "" {
			b.WriteString(": " + e.Message)
		}
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	if e.kind() == ErrAccessDenied {
		b.WriteString(" (the credentials were rejected or lack permission; " + credentialsHint + ")")
	}
	return b.String()
}

func (e *S3Error) Unwrap() error { return e.Err }

// Is matches the objstore sentinel for the S3 code.
func (e *S3Error) Is(target error) bool {
	k := e.kind()
	return k != nil && target == k
}

func (e *S3Error) kind() error {
	switch e.Code {
	case "NoSuchKey":
		return ErrNotFound
	case "NoSuchBucket":
		return ErrBucketNotFound
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
		"ExpiredToken", "InvalidToken", "TokenRefreshRequired",
		"XAdminUserNotFound": // versitygw's InvalidAccessKeyId, with status 404
		return ErrAccessDenied
	}
	if e.StatusCode == http.StatusForbidden {
		return ErrAccessDenied
	}
	return nil
}

// s3Error describes err from the client for one operation.
func (s *S3) s3Error(op, key string, err error) error {
	e := &S3Error{Op: op, Endpoint: s.t.endpoint, Bucket: s.t.bucket, Key: key, Err: err}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		e.Code, e.Message, e.StatusCode = resp.Code, resp.Message, resp.StatusCode
	}
	return e
}
