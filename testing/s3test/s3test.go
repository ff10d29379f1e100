// Package s3test runs an S3 API server in the test process
// (github.com/johannesboyne/gofakes3 over net/http/httptest) and points the
// AWS SDK at it through the standard environment, so that Beam's s3
// filesystem, and everything that reads s3:// paths through it, talks to a
// real HTTP server. A child process (the launcher run as a binary) inherits
// the same environment and reaches the same server.
//
// Beam's s3 filesystem builds its client with config.LoadDefaultConfig and
// no options, so only the environment can steer it: AWS_ENDPOINT_URL_S3 for
// the endpoint, AWS_REGION, static credentials. It cannot ask for
// path-style addressing, and needs not: the SDK's endpoint rules address a
// bucket by path when the endpoint's host is an IP address, as here.
package s3test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/revenue-stream/hourly/testing/gcstest"
)

var (
	once    sync.Once
	backend *s3mem.Backend
	started error
)

// env points the AWS SDK at the server. The credentials are the fake
// server's (it checks none); the shared config files are blanked so that a
// developer's ~/.aws cannot redirect the tests; the metadata service is
// off so that a missing credential fails fast instead of probing it.
//
// Response checksum validation is asked for only when an operation requires
// it. By default (when_supported) the SDK sends every GetObject with
// x-amz-checksum-mode: ENABLED and, when the response carries no
// x-amz-checksum-* header, logs "Response has no supported checksum. Not
// validating response payload." at WARN: once per object read. gofakes3
// stores and returns no checksums, so every read here would warn. S3 itself
// stores a checksum for every new object (CRC64NVME by default) and returns
// it, so production keeps the default and its reads stay validated; only
// this harness turns it off. (Beam's s3 filesystem builds its client with
// no options, so the SDK's environment setting is the only handle.)
func env(url string) map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_S3":         url,
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",

		"AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
	}
}

// Server starts the process's fake S3 server on first use and returns its
// backend. One server serves every test of a package, as the filesystem
// clients are cached per endpoint; tests keep apart by using their own
// bucket (NewBucket).
func Server(t testing.TB) *s3mem.Backend {
	t.Helper()
	once.Do(func() {
		backend = s3mem.New()
		srv := httptest.NewServer(gofakes3.New(backend).Server())
		for k, v := range env(srv.URL) {
			if err := os.Setenv(k, v); err != nil {
				started = err
				return
			}
		}
	})
	if started != nil {
		t.Fatalf("s3test: start fake S3 server: %v", started)
	}
	return backend
}

// NewBucket creates a bucket named after the test and returns "s3://NAME".
func NewBucket(t testing.TB) string {
	t.Helper()
	name := gcstest.BucketName(t.Name())
	if err := Server(t).CreateBucket(name); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", name, err)
	}
	return "s3://" + name
}

// Put creates (or replaces) one object: s3://bucket/key.
func Put(t testing.TB, path string, content []byte) {
	t.Helper()
	bucket, key, ok := strings.Cut(strings.TrimPrefix(path, "s3://"), "/")
	if !ok || !strings.HasPrefix(path, "s3://") {
		t.Fatalf("s3test: %q is not s3://BUCKET/KEY", path)
	}
	if _, err := Server(t).PutObject(bucket, key, map[string]string{}, bytes.NewReader(content), int64(len(content)), nil); err != nil {
		t.Fatalf("s3test: put %s: %v", path, err)
	}
}

// Upload copies every file under the local folder dir to the objects under
// the s3:// prefix, keeping relative paths.
func Upload(t testing.TB, dir, prefix string) {
	t.Helper()
	gcstest.Walk(t, dir, func(rel string, data []byte) {
		Put(t, strings.TrimSuffix(prefix, "/")+"/"+rel, data)
	})
}

// Get reads one object's content.
func Get(t testing.TB, path string) []byte {
	t.Helper()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "s3://"), "/")
	obj, err := Server(t).GetObject(bucket, key, nil)
	if err != nil {
		t.Fatalf("s3test: get %s: %v", path, err)
	}
	defer obj.Contents.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(obj.Contents); err != nil {
		t.Fatalf("s3test: read %s: %v", path, err)
	}
	return b.Bytes()
}
