package s3api_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/objstore/s3api"
)

// FuzzServe sends arbitrary requests to a server without auth (so that they
// reach the operations) and checks that none panics or is answered with a
// server error: every malformed request is the client's mistake.
func FuzzServe(f *testing.F) {
	dir := f.TempDir()
	st, err := bucket.New(bucket.Options{
		Buckets: map[string]string{"floe": filepath.Join(dir, "data")},
		TempDir: filepath.Join(dir, "staging"),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	h := s3api.New(s3api.Options{Store: st})
	methods := []string{"GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"}
	f.Add(uint8(2), "/floe/a/b", "", "", "", []byte("body"))
	f.Add(uint8(0), "/floe/a/b", "", "bytes=0-1", "", []byte(nil))
	f.Add(uint8(0), "/floe", "list-type=2&prefix=a/&delimiter=/&max-keys=1", "", "", []byte(nil))
	f.Add(uint8(2), "/floe/c", "", "", "floe/a/b", []byte(nil))
	f.Add(uint8(3), "/floe", "delete", "", "", []byte("<Delete><Object><Key>a/b</Key></Object></Delete>"))
	f.Add(uint8(3), "/floe/m", "uploads", "", "", []byte(nil))
	f.Add(uint8(3), "/floe/m", "uploadId=x", "", "", []byte("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>"))
	f.Add(uint8(2), "/floe/m", "partNumber=1&uploadId=x", "", "", []byte("p"))
	f.Add(uint8(0), "/floe/m", "uploadId=x&max-parts=-1", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, m uint8, path, query, rng, copySrc string, body []byte) {
		req := httptest.NewRequest(http.MethodGet, "/", bytes.NewReader(body))
		req.Method = methods[int(m)%len(methods)]
		req.URL.Path, req.URL.RawQuery = path, query
		req.ContentLength = int64(len(body))
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		if copySrc != "" {
			req.Header.Set("X-Amz-Copy-Source", copySrc)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
			t.Fatalf("%s %q ?%q: %d %s", req.Method, path, query, rec.Code, rec.Body.Bytes())
		}
	})
}
