package objstore

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// ErrInvalidConfig is matched by NewS3's error for a configuration that
// cannot work, found before any request is made.
var ErrInvalidConfig = errors.New("invalid S3 configuration")

// awsEndpoint is used when S3Config.Endpoint is empty; minio-go then picks
// the bucket's regional host itself.
const awsEndpoint = "https://s3.amazonaws.com"

// S3Config selects an S3-compatible bucket. Only Bucket is required.
type S3Config struct {
	// Endpoint is the service URL, e.g. http://127.0.0.1:7070 or
	// https://s3.eu-west-1.amazonaws.com; empty means AWS.
	Endpoint string
	Bucket   string
	// Region signs requests; empty asks the service for the bucket's region.
	Region string
	// Prefix is a folder inside the bucket that holds every key, so several
	// stores can share a bucket; a trailing "/" is optional.
	Prefix string
	// PathStyle forces http://host/bucket/key addressing. Otherwise AWS and
	// other hosts known to support it get virtual-hosted addressing
	// (http://bucket.host/key) and custom endpoints get path style.
	PathStyle bool

	// Credentials. Empty means the AWS chain: AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), then the
	// AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials profile named by
	// AWS_PROFILE, then the container or instance role.
	AccessKeyID     string
	SecretAccessKey string `json:"-"`
	SessionToken    string `json:"-"`

	// envErr records a malformed variable seen by S3ConfigFromEnv, which
	// has no error result; NewS3 reports it.
	envErr error
}

// S3ConfigFromEnv reads CAIRN_S3_ENDPOINT, CAIRN_S3_BUCKET, CAIRN_S3_REGION,
// CAIRN_S3_PREFIX and CAIRN_S3_PATH_STYLE (a boolean such as "true" or "1").
// Credentials are deliberately not read here: the AWS chain in NewS3 reads
// them, so they stay in the variables every S3 tool already uses.
func S3ConfigFromEnv(getenv func(string) string) S3Config {
	cfg := S3Config{
		Endpoint: getenv("CAIRN_S3_ENDPOINT"),
		Bucket:   getenv("CAIRN_S3_BUCKET"),
		Region:   getenv("CAIRN_S3_REGION"),
		Prefix:   getenv("CAIRN_S3_PREFIX"),
	}
	if v := getenv("CAIRN_S3_PATH_STYLE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			cfg.envErr = fmt.Errorf("CAIRN_S3_PATH_STYLE=%q is not a boolean (true, false, 1, 0)", v)
		}
		cfg.PathStyle = b
	}
	return cfg
}

// String shows the configuration with the secret key and session token
// redacted, so logging a config never leaks them.
func (c S3Config) String() string {
	return fmt.Sprintf("S3Config{Endpoint:%q Bucket:%q Region:%q Prefix:%q PathStyle:%t AccessKeyID:%q SecretAccessKey:%s SessionToken:%s}",
		c.Endpoint, c.Bucket, c.Region, c.Prefix, c.PathStyle, c.AccessKeyID, redacted(c.SecretAccessKey), redacted(c.SessionToken))
}

// GoString keeps %#v, which bypasses String, from printing the secrets.
func (c S3Config) GoString() string { return "objstore." + c.String() }

// LogValue keeps slog handlers, JSON ones included, from printing the secrets.
func (c S3Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoint", c.Endpoint), slog.String("bucket", c.Bucket),
		slog.String("region", c.Region), slog.String("prefix", c.Prefix),
		slog.Bool("path_style", c.PathStyle), slog.String("access_key_id", c.AccessKeyID),
		slog.String("secret_access_key", redacted(c.SecretAccessKey)),
		slog.String("session_token", redacted(c.SessionToken)),
	)
}

func redacted(secret string) string {
	if secret == "" {
		return `""`
	}
	return "[redacted]"
}

// s3Target is a validated configuration in the form minio-go takes.
type s3Target struct {
	host     string // host[:port], no scheme
	secure   bool
	endpoint string // the URL for error messages
	bucket   string
	prefix   string // "" or ends in "/"
	lookup   minio.BucketLookupType
}

func (c S3Config) target() (s3Target, error) {
	bad := func(format string, args ...any) (s3Target, error) {
		return s3Target{}, fmt.Errorf("objstore: %w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if c.envErr != nil {
		return bad("%v", c.envErr)
	}
	if c.Bucket == "" {
		return bad("no bucket given")
	}
	if err := s3utils.CheckValidBucketName(c.Bucket); err != nil {
		return bad("bucket %q: %v", c.Bucket, err)
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return bad("an access key ID and a secret access key must be given together")
	}
	if c.SessionToken != "" && c.AccessKeyID == "" {
		return bad("a session token needs an access key ID and secret access key")
	}
	t := s3Target{bucket: c.Bucket, lookup: minio.BucketLookupAuto}
	if c.PathStyle {
		t.lookup = minio.BucketLookupPath
	}
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = awsEndpoint
	}
	// The endpoint is never echoed whole: a mistyped one may carry a
	// password (user:pass@host) or a token in its query.
	u, err := url.Parse(endpoint)
	switch {
	case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return bad("endpoint must be an http:// or https:// URL with a host, such as http://127.0.0.1:7070")
	case u.User != nil:
		return bad("endpoint must not contain credentials; use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		// minio-go addresses buckets at the root of the host.
		return bad("endpoint %s must have no path, query or fragment", u.Scheme+"://"+u.Host)
	}
	t.host, t.secure = u.Host, u.Scheme == "https"
	t.endpoint = u.Scheme + "://" + u.Host
	if c.Prefix != "" {
		p := strings.TrimSuffix(c.Prefix, "/")
		if err := ValidateKey(p); err != nil {
			return bad("prefix: %v", err)
		}
		t.prefix = p + "/"
	}
	return t, nil
}
