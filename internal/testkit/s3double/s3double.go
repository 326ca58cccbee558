// Package s3double serves Floe's own S3 API, with authentication off, over
// an embedded object store in a test's temporary directory: the stand-in
// for external S3 in tests of code that talks to S3 through the AWS SDK.
package s3double

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/objstore/s3api"
)

// Start returns the object store holding the named buckets and the URL of
// an S3 endpoint serving it (path-style; any access key is accepted). Both
// close when the test ends.
func Start(t testing.TB, buckets ...string) (*bucket.Store, string) {
	t.Helper()
	dir := t.TempDir()
	bs := make(map[string]string, len(buckets))
	for _, b := range buckets {
		bs[b] = filepath.Join(dir, "buckets", b)
	}
	objs, err := bucket.New(bucket.Options{Buckets: bs, TempDir: filepath.Join(dir, "tmp")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objs.Close() })
	srv := httptest.NewServer(s3api.New(s3api.Options{Store: objs})) // authentication off: any key works
	t.Cleanup(srv.Close)
	return objs, srv.URL
}
