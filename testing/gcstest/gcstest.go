// Package gcstest runs a GCS JSON API server in the test process
// (github.com/fsouza/fake-gcs-server) and points cloud.google.com/go/storage
// at it through STORAGE_EMULATOR_HOST, so that Beam's gcs filesystem, and
// everything that reads gs:// paths through it, talks to a real HTTP server.
package gcstest

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	_ "github.com/revenue-stream/hourly/internal/files/gcs" // gs:// for internal/files, as a binary imports it
	_ "github.com/revenue-stream/hourly/internal/files/s3"  // s3:// paths
)

var (
	once    sync.Once
	server  *fakestorage.Server
	started error
)

// Server returns the process's fake GCS server, starting it on first use.
// One server serves every test of a package: the storage client reads
// STORAGE_EMULATOR_HOST once per client, and clients are cached. Tests keep
// apart by using their own bucket (NewBucket).
func Server(t testing.TB) *fakestorage.Server {
	t.Helper()
	once.Do(func() {
		server, started = fakestorage.NewServerWithOptions(fakestorage.Options{
			Scheme: "http", Host: "127.0.0.1", Port: 0,
			// The storage client reads objects through the XML API at
			// http://HOST/BUCKET/OBJECT; the server serves that path only
			// for its public host, "storage.googleapis.com" by default.
			PublicHost: "127.0.0.1",
		})
		if started == nil {
			// The storage client adds /storage/v1/ itself.
			started = os.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(server.URL(), "http://"))
		}
	})
	if started != nil {
		t.Fatalf("gcstest: start fake GCS server: %v", started)
	}
	return server
}

// NewBucket creates a bucket named after the test and returns "gs://NAME".
func NewBucket(t testing.TB) string {
	t.Helper()
	s := Server(t)
	name := bucketName(t.Name())
	s.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
	return "gs://" + name
}

// BucketName makes a valid, unique-per-test bucket name: lower case, digits
// and dashes, at most 63 characters (valid for GCS and S3 alike).
func BucketName(test string) string { return bucketName(test) }

func bucketName(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := "t-" + strings.Trim(b.String(), "-")
	if len(name) > 55 {
		name = name[:55]
	}
	mu.Lock()
	defer mu.Unlock()
	seq++
	return fmt.Sprintf("%s-%d", name, seq)
}

var (
	mu  sync.Mutex
	seq int
)

// Put creates (or replaces) one object: gs://bucket/object.
func Put(t testing.TB, path string, content []byte) {
	t.Helper()
	bucket, object, ok := strings.Cut(strings.TrimPrefix(path, "gs://"), "/")
	if !ok || !strings.HasPrefix(path, "gs://") {
		t.Fatalf("gcstest: %q is not gs://BUCKET/OBJECT", path)
	}
	Server(t).CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: object},
		Content:     content,
	})
}

// Upload copies every file under the local folder dir to the objects under
// the gs:// prefix, keeping relative paths (a partition folder p0 becomes
// PREFIX/p0/...).
func Upload(t testing.TB, dir, prefix string) {
	t.Helper()
	Walk(t, dir, func(rel string, data []byte) {
		Put(t, strings.TrimSuffix(prefix, "/")+"/"+rel, data)
	})
}

// Walk calls put with the slash-separated relative path and content of
// every file under the local folder dir: what an upload to any object
// store copies.
func Walk(t testing.TB, dir string, put func(rel string, data []byte)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		put(filepath.ToSlash(rel), data)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
}

// Get reads one object's content.
func Get(t testing.TB, path string) []byte {
	t.Helper()
	bucket, object, _ := strings.Cut(strings.TrimPrefix(path, "gs://"), "/")
	obj, err := Server(t).GetObject(bucket, object)
	if err != nil {
		t.Fatalf("gcstest: get %s: %v", path, err)
	}
	return obj.Content
}

// RefuseWrites puts a front before the test server that answers 403, as
// GCS does for an account without write access, to every request that
// would change an object of bucket ("gs://NAME"), and passes everything
// else through; STORAGE_EMULATOR_HOST points at the front until the test
// ends. The bucket then behaves as a read-only production raw log bucket:
// it can be listed and read, not written or deleted.
func RefuseWrites(t *testing.T, bucket string) {
	t.Helper()
	target, err := url.Parse(Server(t).URL())
	if err != nil {
		t.Fatalf("gcstest: %v", err)
	}
	name := strings.TrimPrefix(bucket, "gs://")
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// JSON API uploads and deletes name the bucket as /b/NAME/ (or
		// /b/NAME/o for an upload); the XML API as /NAME/.
		touches := strings.Contains(r.URL.Path, "/b/"+name+"/") || strings.HasSuffix(r.URL.Path, "/b/"+name) ||
			strings.HasPrefix(r.URL.Path, "/"+name+"/")
		if touches && r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":{"code":403,"message":"tester does not have storage.objects.create access to the Google Cloud Storage object. Permission 'storage.objects.create' denied on resource (or it may not exist).","errors":[{"reason":"forbidden","message":"read-only bucket %s"}]}}`, name)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(front.URL, "http://"))
}
