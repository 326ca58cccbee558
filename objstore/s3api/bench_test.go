package s3api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/floe-lake/floe/sigv4"
)

// benchSize is the object size of the throughput benchmarks.
const benchSize = 256 << 20

// patternReader yields n bytes of a repeating pattern without allocating.
type patternReader struct {
	buf []byte
	n   int64
	off int
}

func newPatternReader(n int64) *patternReader {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*31 + i>>10)
	}
	return &patternReader{buf: buf, n: n}
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n {
		b = b[:p.n]
	}
	n := copy(b, p.buf[p.off:])
	p.off = (p.off + n) % len(p.buf)
	p.n -= int64(n)
	return n, nil
}

// signedRequest builds a request signed by the table credential with
// UNSIGNED-PAYLOAD, as presigned and most streaming clients send it.
func (e *env) signedRequest(b testing.TB, method, key string, body io.Reader, size int64) *http.Request {
	req, err := http.NewRequest(method, e.srv.URL+"/"+testBucket+"/"+key, body)
	if err != nil {
		b.Fatal(err)
	}
	if body != nil {
		req.ContentLength = size
	}
	c := e.res[akTableA]
	if err := sigv4.Sign(req, sigv4.Credentials{AccessKeyID: akTableA, SecretAccessKey: c.secret, SessionToken: c.token},
		"us-east-1", "s3", time.Now(), sigv4.UnsignedPayload, sigv4.SignOptions{SignBody: true}); err != nil {
		b.Fatal(err)
	}
	return req
}

// directRead reads path the way an engine reading the warehouse directly
// would: a file, a 256 KiB buffer, sequential reads. It returns MB/s.
func directRead(b *testing.B, path string) float64 {
	buf := make([]byte, 256<<10)
	best := 0.0
	for range 3 {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var n int64
		for {
			m, err := f.Read(buf)
			n += int64(m)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		d := time.Since(start)
		_ = f.Close()
		best = max(best, float64(n)/1e6/d.Seconds())
	}
	return best
}

// directWrite writes benchSize bytes to a new file in dir and fsyncs it, as
// the store does for an upload. It returns MB/s.
func directWrite(b *testing.B, dir string) float64 {
	best := 0.0
	for i := range 2 {
		path := filepath.Join(dir, fmt.Sprintf("direct-%d", i))
		start := time.Now()
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 256<<10)
		if _, err := io.CopyBuffer(f, newPatternReader(benchSize), buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
		best = max(best, float64(benchSize)/1e6/time.Since(start).Seconds())
		_ = os.Remove(path)
	}
	return best
}

// BenchmarkGet streams a 256 MiB object through the handler over a loopback
// listener and reports the ratio to reading the file directly.
func BenchmarkGet(b *testing.B) {
	for _, enc := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "encrypted"}[enc], func(b *testing.B) {
			e := newEnv(b, envOptions{encrypt: enc})
			resp, err := e.srv.Client().Do(e.signedRequest(b, http.MethodPut, "t/a/big", newPatternReader(benchSize), benchSize))
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("PUT: %v %v", err, resp)
			}
			_ = resp.Body.Close()
			direct := directRead(b, filepath.Join(e.root, "t", "a", "big"))
			client := e.srv.Client()
			buf := make([]byte, 256<<10)
			b.SetBytes(benchSize)
			b.ResetTimer()
			for b.Loop() {
				resp, err := client.Do(e.signedRequest(b, http.MethodGet, "t/a/big", nil, 0))
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("GET: %v %v", err, resp)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
				_ = resp.Body.Close()
				if err != nil || n != benchSize {
					b.Fatalf("GET read %d: %v", n, err)
				}
			}
			b.StopTimer()
			got := float64(benchSize) * float64(b.N) / 1e6 / b.Elapsed().Seconds()
			b.ReportMetric(direct, "direct-MB/s")
			b.ReportMetric(got/direct, "ratio")
		})
	}
}

// BenchmarkGetRawHTTP is the loopback ceiling for BenchmarkGet: a bare
// net/http handler copying the same file to the response with io.Copy
// (sendfile) and with a 256 KiB buffer.
func BenchmarkGetRawHTTP(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(f, newPatternReader(benchSize)); err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	for _, mode := range []string{"sendfile", "copy"} {
		b.Run(mode, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				f, err := os.Open(path)
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				defer f.Close()
				w.Header().Set("Content-Length", fmt.Sprint(benchSize))
				if mode == "sendfile" {
					_, _ = io.Copy(w, f)
				} else {
					_, _ = io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{f}, make([]byte, 256<<10))
				}
			}))
			defer srv.Close()
			buf := make([]byte, 256<<10)
			b.SetBytes(benchSize)
			for b.Loop() {
				resp, err := srv.Client().Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
				_ = resp.Body.Close()
				if n != benchSize {
					b.Fatalf("read %d", n)
				}
			}
		})
	}
}

// BenchmarkPut uploads a 256 MiB object through the handler over a loopback
// listener and reports the ratio to writing and fsyncing a file directly.
func BenchmarkPut(b *testing.B) {
	for _, enc := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "encrypted"}[enc], func(b *testing.B) {
			e := newEnv(b, envOptions{encrypt: enc})
			direct := directWrite(b, b.TempDir())
			client := e.srv.Client()
			b.SetBytes(benchSize)
			b.ResetTimer()
			for b.Loop() {
				resp, err := client.Do(e.signedRequest(b, http.MethodPut, "t/a/big", newPatternReader(benchSize), benchSize))
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("PUT: %v %v", err, resp)
				}
				_ = resp.Body.Close()
			}
			b.StopTimer()
			got := float64(benchSize) * float64(b.N) / 1e6 / b.Elapsed().Seconds()
			b.ReportMetric(direct, "direct-MB/s")
			b.ReportMetric(got/direct, "ratio")
		})
	}
}

// BenchmarkPutRawHTTP is the loopback ceiling for BenchmarkPut: a bare
// net/http handler copying the request body to a new file and fsyncing it.
func BenchmarkPutRawHTTP(b *testing.B) {
	dir := b.TempDir()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Create(filepath.Join(dir, "put"))
		if err == nil {
			_, err = io.CopyBuffer(f, r.Body, make([]byte, 256<<10))
			if err == nil {
				err = f.Sync()
			}
			_ = f.Close()
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
		}
	}))
	defer srv.Close()
	b.SetBytes(benchSize)
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPut, srv.URL, newPatternReader(benchSize))
		if err != nil {
			b.Fatal(err)
		}
		req.ContentLength = benchSize
		resp, err := srv.Client().Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("PUT: %v %v", err, resp)
		}
		_ = resp.Body.Close()
	}
}
