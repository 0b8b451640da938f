package objstore

import (
	"errors"
	"net/http"
	"time"

	"github.com/minio/minio-go/v7/pkg/credentials"
)

// ErrNoCredentials is matched by NewS3's error when neither the
// configuration nor the AWS chain supplies credentials. Anonymous requests
// could at best read a public bucket, never write, so NewS3 refuses them.
var ErrNoCredentials = errors.New("no S3 credentials found")

// credentialsHint tells a user where credentials come from.
const credentialsHint = "credentials come from the configuration, else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " +
	"else the AWS_PROFILE profile in ~/.aws/credentials, else the container or instance role"

// metadataTimeout bounds each request to the instance or container
// metadata service: off AWS nothing may answer, and the AWS chain should
// fall through quickly rather than hang start-up.
const metadataTimeout = 5 * time.Second

// credentialsFor returns the configured keys, or else the chain AWS tools
// use, in their order.
func credentialsFor(c S3Config) *credentials.Credentials {
	if c.AccessKeyID != "" {
		return credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	}
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{Client: &http.Client{Timeout: metadataTimeout}},
	})
}
