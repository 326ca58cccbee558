package sigv4

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
	f.Add("AWS4-HMAC-SHA256 Credential=a/b/c/20150830/r/s3/aws4_request,SignedHeaders=host,Signature=" + strings.Repeat("a", 64))
	f.Add("AWS4-HMAC-SHA256 Credential=,SignedHeaders=;;,Signature=zz")
	f.Add("AWS AKID:sig")
	f.Add("AWS4-HMAC-SHA256 Credential=x/20150830/r/s/aws4_request, Credential=y")
	f.Fuzz(func(t *testing.T, s string) {
		a, e := parseAuthorization(s)
		if e != nil {
			if e.Status != http.StatusBadRequest || e.Code == "" || e.Message == "" {
				t.Fatalf("bad error %+v", e)
			}
			return
		}
		if a.accessKey == "" || len(a.signature) != 32 || len(a.date) != 8 || a.region == "" || a.service == "" {
			t.Fatalf("accepted incomplete %+v", a)
		}
		if !containsString(a.names, "host") || strings.Join(a.names, ";") != a.signedHeaders {
			t.Fatalf("signed headers %q", a.signedHeaders)
		}
	})
}

// fuzzChunkKey and fuzzSeed are fixed so that seed corpora with valid
// signatures exist.
var (
	fuzzKey  = deriveKey(testSecret, "20260301", "us-east-1", "s3")
	fuzzSeed = bytes.Repeat([]byte{7}, 32)
)

func FuzzChunkedReader(f *testing.F) {
	payload := []byte("hello, chunked world")
	_, unsigned := buildStream(f, payload, streamSpec{mode: StreamingUnsignedTrailer, chunk: 7, trailerAlg: "crc32"})
	f.Add(unsigned, uint8(0), uint16(3))
	_, signed := buildStream(f, payload, streamSpec{mode: StreamingPayloadTrailer, chunk: 5, trailerAlg: "sha256"})
	f.Add(signed, uint8(1), uint16(1))
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), uint8(0), uint16(100))
	f.Add([]byte("5;chunk-signature=00\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"), uint8(2), uint16(2))
	f.Add([]byte("fffffffffffffff\r\n"), uint8(0), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8, readSize uint16) {
		o := chunkedOptions{want: -1, trailers: mode&1 == 1, trailer: http.Header{}}
		if mode&2 != 0 {
			o.signer = newChunkSigner(fuzzKey, "20260301T120000Z", scopeString("20260301", "us-east-1", "s3"), fuzzSeed)
		}
		if mode&4 != 0 {
			o.want = int64(len(payload))
		}
		if o.trailers {
			o.declared = []string{"x-amz-checksum-crc32", "x-amz-meta-x"}
		}
		c, e := newChunkedReader(io.NopCloser(bytes.NewReader(data)), o)
		if e != nil {
			t.Fatal(e)
		}
		var out []byte
		var err error
		if readSize == 0 {
			var buf bytes.Buffer
			_, err = c.WriteTo(&buf)
			out = buf.Bytes()
			if err == nil {
				err = io.EOF
			}
		} else {
			p := make([]byte, int(readSize))
			for err == nil {
				var n int
				n, err = c.Read(p)
				if n < 0 || n > len(p) {
					t.Fatalf("Read returned %d", n)
				}
				out = append(out, p[:n]...)
			}
		}
		if len(out) > len(data) {
			t.Fatalf("decoded %d bytes from %d", len(out), len(data))
		}
		var se *Error
		if err != io.EOF && !errors.As(err, &se) {
			t.Fatalf("error %v is neither io.EOF nor *Error", err)
		}
		if n, err2 := c.Read(make([]byte, 4)); n != 0 || (err2 != err && !errors.As(err2, &se)) {
			t.Fatalf("read after end: %d %v", n, err2)
		}
	})
}

func FuzzVerify(f *testing.F) {
	add := func(r *http.Request) {
		var buf bytes.Buffer
		if err := r.Write(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	for _, mode := range []string{StreamingPayload, StreamingUnsignedTrailer} {
		r, _ := buildStream(f, []byte("fuzz payload"), streamSpec{mode: mode, chunk: 4, trailerAlg: "crc32c"})
		r.RequestURI = ""
		r.Header.Set("Content-Length", "")
		add(r)
	}
	r, _ := http.NewRequest("PUT", "http://s3.local/b/k?uploadId=1&partNumber=2", strings.NewReader("abc"))
	Sign(r, Credentials{testAK, testSecret, testToken}, "us-east-1", "s3", streamNow, hexSHA([]byte("abc")), SignOptions{SignBody: true})
	add(r)
	r, _ = http.NewRequest("GET", "http://s3.local/b/k%20x", nil)
	u, _ := Presign(r, Credentials{testAK, testSecret, ""}, "us-east-1", "s3", streamNow, time.Hour, SignOptions{})
	r, _ = http.NewRequest("GET", u, nil)
	add(r)
	if dirs, err := filepath.Glob("../../shared/spec/aws-sigv4-test-suite/*/header-signed-request.txt"); err == nil {
		for _, d := range dirs[:min(len(dirs), 5)] {
			if b, err := os.ReadFile(d); err == nil {
				f.Add(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")))
			}
		}
	}
	f.Add([]byte("GET /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a%2F20260301%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260301T120000Z&X-Amz-Expires=99&X-Amz-SignedHeaders=host&X-Amz-Signature=" + hex.EncodeToString(fuzzSeed) + " HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return
		}
		for _, v := range []*Verifier{
			{Lookup: testLookup, Service: "s3", Now: func() time.Time { return streamNow }},
			{Lookup: testLookup, Service: "service", Normalize: true, MaxBufferedBody: 1 << 10,
				Now: func() time.Time { return time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC) }},
		} {
			rr := r.Clone(r.Context())
			res, err := v.Verify(rr)
			if err != nil {
				var se *Error
				if !errors.As(err, &se) {
					t.Fatalf("Verify error %v is not an *Error", err)
				}
				continue
			}
			out, _ := io.ReadAll(io.LimitReader(res.Body, int64(len(raw))+1))
			if len(out) > len(raw) {
				t.Fatalf("body longer than the request")
			}
		}
	})
}
