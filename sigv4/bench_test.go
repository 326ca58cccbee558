package sigv4

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// benchRequest is a header-authenticated GET as aws-sdk-go-v2's S3 client
// sends it (eight signed headers).
func benchRequest(b *testing.B) *http.Request {
	r := httptest.NewRequest("GET", "http://s3.local:9000/warehouse/db/table/data/00000-0-4f1c.parquet?partNumber=1", nil)
	r.Header.Set("Accept-Encoding", "identity")
	r.Header.Set("Amz-Sdk-Invocation-Id", "7e410a5a-25f4-43d1-9689-e625be924c3a")
	r.Header.Set("Amz-Sdk-Request", "attempt=1; max=3")
	r.Header.Set("Range", "bytes=4-1048579")
	r.Header.Set("User-Agent", "aws-sdk-go-v2/1.45.1 ua/2.1 os/linux lang/go#1.26.8")
	if err := Sign(r, Credentials{testAK, testSecret, testToken}, "us-east-1", "s3", streamNow, EmptySHA256, SignOptions{SignBody: true}); err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkVerifyHeader(b *testing.B) {
	r := benchRequest(b)
	v := streamVerifier()
	b.ReportAllocs()
	for b.Loop() {
		res, err := v.Verify(r)
		if err != nil || res.AccessKeyID != testAK {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyPresigned(b *testing.B) {
	r0 := httptest.NewRequest("GET", "http://s3.local:9000/warehouse/db/table/metadata/v3.metadata.json", nil)
	u, err := Presign(r0, Credentials{testAK, testSecret, testToken}, "us-east-1", "s3", streamNow, time.Hour, SignOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", u, nil)
	v := streamVerifier()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	r := benchRequest(b)
	c := Credentials{testAK, testSecret, testToken}
	b.ReportAllocs()
	for b.Loop() {
		if err := Sign(r, c, "us-east-1", "s3", streamNow, EmptySHA256, SignOptions{SignBody: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// onlyReader hides WriterTo so that io.Copy uses Read.
type onlyReader struct{ io.Reader }

// onlyWriter hides io.Discard's ReaderFrom so that io.CopyBuffer uses its
// buffer.
type onlyWriter struct{ io.Writer }

// BenchmarkBody measures the verifying body reader: aws-chunked decoding
// (signed 64 KiB chunks, unsigned trailer mode as aws-sdk-go-v2 sends it:
// one chunk plus a CRC32 trailer, or 64 KiB chunks), hex SHA-256 and
// UNSIGNED-PAYLOAD pass-through, each through io.Copy with WriteTo and
// with plain 32 KiB Reads.
func BenchmarkBody(b *testing.B) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 8<<20/16) // 8 MiB
	type variant struct {
		name string
		req  func() (*http.Request, []byte)
	}
	stream := func(s streamSpec) func() (*http.Request, []byte) {
		return func() (*http.Request, []byte) { return buildStream(b, payload, s) }
	}
	plain := func(hash string) func() (*http.Request, []byte) {
		return func() (*http.Request, []byte) {
			r := httptest.NewRequest("PUT", "http://s3.local/b/k", nil)
			if err := Sign(r, Credentials{testAK, testSecret, ""}, "us-east-1", "s3", streamNow, hash, SignOptions{SignBody: true}); err != nil {
				b.Fatal(err)
			}
			r.ContentLength = int64(len(payload))
			return r, payload
		}
	}
	variants := []variant{
		{"signed-64KiB", stream(streamSpec{mode: StreamingPayload, chunk: 64 << 10})},
		{"signed-trailer-crc32-64KiB", stream(streamSpec{mode: StreamingPayloadTrailer, chunk: 64 << 10, trailerAlg: "crc32"})},
		{"unsigned-trailer-crc32-1chunk", stream(streamSpec{mode: StreamingUnsignedTrailer, chunk: len(payload), trailerAlg: "crc32"})},
		{"unsigned-trailer-crc32-64KiB", stream(streamSpec{mode: StreamingUnsignedTrailer, chunk: 64 << 10, trailerAlg: "crc32"})},
		{"unsigned-trailer-crc64nvme-1chunk", stream(streamSpec{mode: StreamingUnsignedTrailer, chunk: len(payload), trailerAlg: "crc64nvme"})},
		{"hex-sha256", plain(hexSHA(payload))},
		{"unsigned-payload", plain(UnsignedPayload)},
	}
	v := streamVerifier()
	for _, vr := range variants {
		r, body := vr.req()
		for _, how := range []string{"copy", "read"} {
			b.Run(vr.name+"/"+how, func(b *testing.B) {
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				buf := make([]byte, 32<<10)
				for b.Loop() {
					rr := *r
					rr.Body = io.NopCloser(bytes.NewReader(body))
					res, err := v.Verify(&rr)
					if err != nil {
						b.Fatal(err)
					}
					var src io.Reader = res.Body
					if how == "read" {
						src = onlyReader{res.Body}
					}
					n, err := io.CopyBuffer(onlyWriter{io.Discard}, src, buf)
					if err != nil || n != int64(len(payload)) {
						b.Fatalf("%d %v", n, err)
					}
				}
			})
		}
	}
}
