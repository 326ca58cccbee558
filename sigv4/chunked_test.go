package sigv4

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsv4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

var streamNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// checksumB64 returns the base64 x-amz-checksum-<alg> value of b.
func checksumB64(t testing.TB, alg string, b []byte) string {
	h, _ := newChecksum(alg)
	if h == nil {
		t.Fatalf("unknown algorithm %s", alg)
	}
	h.Write(b)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// streamSpec describes an aws-chunked upload built the way the AWS SDKs
// build them.
type streamSpec struct {
	mode        string // StreamingPayload, StreamingPayloadTrailer or StreamingUnsignedTrailer
	chunk       int    // chunk size
	trailerAlg  string // checksum trailer algorithm, "" for none
	headerAlg   string // checksum header algorithm, "" for none
	headerValue string // replaces the computed header checksum

	// Tampering hooks, applied while encoding.
	trailerValue  string // replaces the computed trailer value
	extraTrailer  string // an undeclared trailer line
	badTrailerSig bool
	decodedLength int64 // replaces x-amz-decoded-content-length when > 0
}

// buildStream signs a streaming upload of payload and returns the request
// as the server sees it plus the encoded body.
func buildStream(t testing.TB, payload []byte, s streamSpec) (*http.Request, []byte) {
	t.Helper()
	r := httptest.NewRequest("PUT", "http://s3.local/bucket/key", nil)
	r.Header.Set("Content-Encoding", "aws-chunked")
	decoded := int64(len(payload))
	if s.decodedLength > 0 {
		decoded = s.decodedLength
	}
	r.Header.Set("X-Amz-Decoded-Content-Length", strconv.FormatInt(decoded, 10))
	trailerName := ""
	if s.trailerAlg != "" {
		trailerName = "x-amz-checksum-" + s.trailerAlg
		r.Header.Set("X-Amz-Trailer", trailerName)
		r.Header.Set("X-Amz-Sdk-Checksum-Algorithm", strings.ToUpper(s.trailerAlg))
	}
	if s.headerAlg != "" {
		v := checksumB64(t, s.headerAlg, payload)
		if s.headerValue != "" {
			v = s.headerValue
		}
		r.Header.Set("X-Amz-Checksum-"+s.headerAlg, v)
	}
	c := Credentials{testAK, testSecret, ""}
	if err := Sign(r, c, "us-east-1", "s3", streamNow, s.mode, SignOptions{SignBody: true}); err != nil {
		t.Fatal(err)
	}
	authz := r.Header.Get("Authorization")
	seed := authz[strings.LastIndex(authz, "=")+1:]
	seedBytes, _ := hex.DecodeString(seed)

	signed := s.mode != StreamingUnsignedTrailer
	ss := awsv4.NewStreamSigner(aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSecret}, "s3", "us-east-1", seedBytes)
	prev := seed
	var b bytes.Buffer
	for off := 0; ; off += s.chunk {
		data := payload[min(off, len(payload)):min(off+s.chunk, len(payload))]
		if signed {
			sig, err := ss.GetSignature(context.Background(), nil, data, streamNow)
			if err != nil {
				t.Fatal(err)
			}
			prev = hex.EncodeToString(sig)
			fmt.Fprintf(&b, "%x;chunk-signature=%s\r\n", len(data), prev)
		} else {
			fmt.Fprintf(&b, "%x\r\n", len(data))
		}
		if len(data) == 0 {
			break
		}
		b.Write(data)
		b.WriteString("\r\n")
	}
	if s.mode == StreamingPayload {
		b.WriteString("\r\n")
	} else {
		var lines []string
		if trailerName != "" {
			v := checksumB64(t, s.trailerAlg, payload)
			if s.trailerValue != "" {
				v = s.trailerValue
			}
			lines = append(lines, trailerName+":"+v)
		}
		if s.extraTrailer != "" {
			lines = append(lines, s.extraTrailer)
		}
		sort.Strings(lines)
		var canon string
		for _, l := range lines {
			b.WriteString(l + "\r\n")
			canon += l + "\n"
		}
		if signed {
			key := deriveKey(testSecret, streamNow.Format(scopeFormat), "us-east-1", "s3")
			sum := sha256.Sum256([]byte(canon))
			sts := "AWS4-HMAC-SHA256-TRAILER\n" + streamNow.Format(amzDateFormat) + "\n" +
				scopeString(streamNow.Format(scopeFormat), "us-east-1", "s3") + "\n" + prev + "\n" + hex.EncodeToString(sum[:])
			m := hmac.New(sha256.New, key)
			m.Write([]byte(sts))
			sig := hex.EncodeToString(m.Sum(nil))
			if s.badTrailerSig {
				sig = strings.Repeat("0", 64)
			}
			b.WriteString("x-amz-trailer-signature:" + sig + "\r\n")
		}
		b.WriteString("\r\n")
	}
	body := b.Bytes()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r, body
}

func streamVerifier() *Verifier {
	return &Verifier{Lookup: testLookup, Service: "s3", Now: func() time.Time { return streamNow }}
}

// readVia reads a verified body with one of the ways consumers read.
func readVia(how string, body io.Reader) ([]byte, error) {
	switch how {
	case "readall":
		return io.ReadAll(body)
	case "onebyte":
		return io.ReadAll(iotest.OneByteReader(body))
	case "copy": // uses WriterTo when the body has it
		var buf bytes.Buffer
		_, err := io.Copy(&buf, body)
		return buf.Bytes(), err
	}
	panic(how)
}

func TestStreamingModes(t *testing.T) {
	payload := make([]byte, 200_000+7)
	for i := range payload {
		payload[i] = byte(i*7 + i>>8)
	}
	modes := []string{StreamingPayload, StreamingPayloadTrailer, StreamingUnsignedTrailer}
	algs := []string{"", "crc32", "crc32c", "crc64nvme", "sha1", "sha256"}
	for _, mode := range modes {
		for _, alg := range algs {
			if mode == StreamingPayload && alg != "" {
				continue
			}
			for _, how := range []string{"readall", "onebyte", "copy"} {
				for _, size := range []int{0, 1, 65536, len(payload)} {
					name := fmt.Sprintf("%s/%s/%s/%d", mode, alg, how, size)
					if how == "onebyte" && size > 65536 {
						continue
					}
					t.Run(name, func(t *testing.T) {
						p := payload[:size]
						r, _ := buildStream(t, p, streamSpec{mode: mode, chunk: 64 << 10, trailerAlg: alg, headerAlg: map[bool]string{true: "crc32c"}[alg == "sha1"]})
						res, err := streamVerifier().Verify(r)
						if err != nil {
							t.Fatalf("Verify: %v", err)
						}
						if res.DecodedLength != int64(size) || res.PayloadHash != mode {
							t.Errorf("DecodedLength %d PayloadHash %s", res.DecodedLength, res.PayloadHash)
						}
						got, err := readVia(how, res.Body)
						if err != nil {
							t.Fatalf("read: %v", err)
						}
						if !bytes.Equal(got, p) {
							t.Fatalf("decoded %d bytes, want %d", len(got), len(p))
						}
						if alg != "" {
							name := "X-Amz-Checksum-" + strings.ToUpper(alg[:1]) + alg[1:]
							if v := res.Trailer.Get(name); v != checksumB64(t, alg, p) {
								t.Errorf("Trailer %v", res.Trailer)
							}
						}
						if n, err := res.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
							t.Errorf("read after EOF: %d %v", n, err)
						}
					})
				}
			}
		}
	}
}

// wantBodyError reads the verified body and checks that it fails with code
// before any io.EOF.
func wantBodyError(t *testing.T, r *http.Request, code string) {
	t.Helper()
	for _, how := range []string{"readall", "copy"} {
		rr := r.Clone(r.Context())
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		rr.Body = io.NopCloser(bytes.NewReader(raw))
		res, err := streamVerifier().Verify(rr)
		if err == nil {
			_, err = readVia(how, res.Body)
		}
		var se *Error
		if !errors.As(err, &se) || se.Code != code {
			t.Errorf("%s: err %v, want %s", how, err, code)
		}
	}
}

func TestStreamingErrors(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // 160,000 bytes, 3 chunks
	spec := func(mode, alg string) streamSpec { return streamSpec{mode: mode, chunk: 64 << 10, trailerAlg: alg} }

	t.Run("tampered-chunk", func(t *testing.T) {
		for mode, code := range map[string]string{
			StreamingPayload:         "SignatureDoesNotMatch",
			StreamingPayloadTrailer:  "SignatureDoesNotMatch",
			StreamingUnsignedTrailer: "BadDigest",
		} {
			r, body := buildStream(t, payload, spec(mode, "crc32"))
			i := bytes.Index(body, []byte("0123456789abcdef")) + 100_000
			body[i] ^= 1
			wantBodyError(t, r, code)
		}
	})
	t.Run("swapped-chunks", func(t *testing.T) {
		// Two chunks with valid signatures in the wrong order break the chain.
		r, body := buildStream(t, bytes.Repeat([]byte{'a'}, 100), streamSpec{mode: StreamingPayload, chunk: 10})
		lines := bytes.SplitAfter(body, []byte("\r\n"))
		lines[0], lines[2] = lines[2], lines[0]
		lines[1], lines[3] = lines[3], lines[1]
		r.Body = io.NopCloser(bytes.NewReader(bytes.Join(lines, nil)))
		wantBodyError(t, r, "SignatureDoesNotMatch")
	})
	t.Run("wrong-trailer-checksum", func(t *testing.T) {
		for _, mode := range []string{StreamingPayloadTrailer, StreamingUnsignedTrailer} {
			for _, alg := range []string{"crc32", "crc32c", "crc64nvme", "sha256"} {
				s := spec(mode, alg)
				s.trailerValue = checksumB64(t, alg, []byte("other"))
				r, _ := buildStream(t, payload, s)
				wantBodyError(t, r, "BadDigest")
			}
		}
	})
	t.Run("malformed-trailer-value", func(t *testing.T) {
		s := spec(StreamingUnsignedTrailer, "crc32")
		s.trailerValue = "not base64!"
		r, _ := buildStream(t, payload, s)
		wantBodyError(t, r, "InvalidRequest")
	})
	t.Run("bad-trailer-signature", func(t *testing.T) {
		s := spec(StreamingPayloadTrailer, "crc32")
		s.badTrailerSig = true
		r, _ := buildStream(t, payload, s)
		wantBodyError(t, r, "SignatureDoesNotMatch")
	})
	t.Run("undeclared-trailer", func(t *testing.T) {
		s := spec(StreamingUnsignedTrailer, "crc32")
		s.extraTrailer = "x-amz-meta-evil:1"
		r, _ := buildStream(t, payload, s)
		wantBodyError(t, r, "InvalidRequest")
	})
	t.Run("missing-trailer", func(t *testing.T) {
		r, body := buildStream(t, payload, spec(StreamingUnsignedTrailer, "crc32"))
		i := bytes.LastIndex(body, []byte("0\r\n"))
		r.Body = io.NopCloser(bytes.NewReader(append(body[:i:i], "0\r\n\r\n"...)))
		wantBodyError(t, r, "InvalidRequest")
	})
	t.Run("header-checksum", func(t *testing.T) {
		s := spec(StreamingPayload, "")
		s.headerAlg = "crc64nvme"
		r, _ := buildStream(t, payload, s)
		r.Header.Set("X-Amz-Checksum-Crc64nvme", checksumB64(t, "crc64nvme", []byte("x")))
		// The checksum header is signed: changing it breaks the signature.
		wantBodyError(t, r, "SignatureDoesNotMatch")
		for _, mode := range []string{StreamingPayload, StreamingPayloadTrailer, StreamingUnsignedTrailer} {
			s := spec(mode, "")
			s.headerAlg, s.headerValue = "crc32c", checksumB64(t, "crc32c", []byte("x"))
			r, _ := buildStream(t, payload, s)
			wantBodyError(t, r, "BadDigest")
		}
	})
	t.Run("truncated", func(t *testing.T) {
		for _, mode := range []string{StreamingPayload, StreamingPayloadTrailer, StreamingUnsignedTrailer} {
			r, body := buildStream(t, payload, spec(mode, "sha256"))
			for _, cut := range []int{0, 1, 10, 100, 65536, 65600, len(body) / 2, len(body) - 150, len(body) - 60} {
				rr := r.Clone(r.Context())
				rr.Body = io.NopCloser(bytes.NewReader(body[:cut]))
				res, err := streamVerifier().Verify(rr)
				if err != nil {
					t.Fatal(err)
				}
				_, err = io.ReadAll(res.Body)
				var se *Error
				if !errors.As(err, &se) || (se.Code != "IncompleteBody" && se.Code != "InvalidRequest") {
					t.Errorf("%s cut at %d of %d: err %v", mode, cut, len(body), err)
				}
			}
		}
	})
	t.Run("decoded-length-larger", func(t *testing.T) {
		s := spec(StreamingUnsignedTrailer, "crc32")
		s.decodedLength = int64(len(payload)) + 1
		r, _ := buildStream(t, payload, s)
		wantBodyError(t, r, "IncompleteBody")
	})
	t.Run("decoded-length-smaller", func(t *testing.T) {
		s := spec(StreamingPayload, "")
		s.decodedLength = int64(len(payload)) - 1
		r, _ := buildStream(t, payload, s)
		wantBodyError(t, r, "InvalidRequest")
	})
	t.Run("oversize-chunk-header", func(t *testing.T) {
		for _, mode := range []string{StreamingPayload, StreamingUnsignedTrailer} {
			r, body := buildStream(t, payload, spec(mode, ""))
			i := bytes.IndexByte(body, '\r')
			long := append([]byte(nil), body[:i]...)
			long = append(long, ";x="...)
			long = append(long, bytes.Repeat([]byte{'a'}, 5000)...)
			long = append(long, body[i:]...)
			r.Body = io.NopCloser(bytes.NewReader(long))
			wantBodyError(t, r, "InvalidRequest")
			// A line longer than the read buffer, with no newline at all.
			r.Body = io.NopCloser(bytes.NewReader(bytes.Repeat([]byte{'1'}, 100_000)))
			wantBodyError(t, r, "InvalidRequest")
		}
	})
	t.Run("oversize-signed-chunk", func(t *testing.T) {
		s := spec(StreamingPayload, "")
		s.decodedLength = MaxSignedChunk + 1
		r, _ := buildStream(t, payload, s)
		r.Body = io.NopCloser(strings.NewReader(fmt.Sprintf("%x;chunk-signature=%s\r\n", MaxSignedChunk+1, strings.Repeat("0", 64))))
		wantBodyError(t, r, "InvalidRequest")
	})
	t.Run("missing-chunk-signature", func(t *testing.T) {
		r, _ := buildStream(t, payload, spec(StreamingPayload, ""))
		r.Body = io.NopCloser(strings.NewReader("10\r\n0123456789abcdef\r\n0\r\n\r\n"))
		wantBodyError(t, r, "InvalidRequest")
	})
	t.Run("bad-chunk-size", func(t *testing.T) {
		for _, b := range []string{"zz\r\n", "-1\r\n", "10000000000000000\r\n", "\r\n", "10\n"} {
			r, _ := buildStream(t, payload, spec(StreamingUnsignedTrailer, ""))
			r.Body = io.NopCloser(strings.NewReader(b))
			wantBodyError(t, r, "InvalidRequest")
		}
	})
	t.Run("no-crlf-after-data", func(t *testing.T) {
		r, _ := buildStream(t, []byte("abc"), spec(StreamingUnsignedTrailer, ""))
		r.Body = io.NopCloser(strings.NewReader("3\r\nabcX\n0\r\n\r\n"))
		wantBodyError(t, r, "InvalidRequest")
	})
}

// TestPlainPayloadChecks covers hex SHA-256 and UNSIGNED-PAYLOAD bodies.
func TestPlainPayloadChecks(t *testing.T) {
	body := []byte("the payload")
	build := func(payloadHash string, hdr map[string]string, sent []byte) *http.Request {
		r := httptest.NewRequest("PUT", "http://s3.local/b/k", nil)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		if err := Sign(r, Credentials{testAK, testSecret, ""}, "us-east-1", "s3", streamNow, payloadHash, SignOptions{SignBody: true}); err != nil {
			t.Fatal(err)
		}
		r.Body = io.NopCloser(bytes.NewReader(sent))
		r.ContentLength = int64(len(sent))
		return r
	}
	md5sum := "5Hl9ZRFS8bD3wSgVwtQl6w==" // not the MD5 of body
	cases := []struct {
		name    string
		hash    string
		hdr     map[string]string
		sent    []byte
		code    string // "" = success
		passthr bool   // Body must be r.Body unchanged
	}{
		{name: "hex-ok", hash: hexSHA(body), sent: body},
		{name: "hex-mismatch", hash: hexSHA(body), sent: []byte("the paylоad"), code: "XAmzContentSHA256Mismatch"},
		{name: "hex-short", hash: hexSHA(body), sent: body[:3], code: "XAmzContentSHA256Mismatch"},
		{name: "unsigned", hash: UnsignedPayload, sent: []byte("anything"), passthr: true},
		{name: "unsigned-crc32", hash: UnsignedPayload, hdr: map[string]string{"X-Amz-Checksum-Crc32": checksumB64(t, "crc32", body)}, sent: body},
		{name: "unsigned-crc32-bad", hash: UnsignedPayload, hdr: map[string]string{"X-Amz-Checksum-Crc32": checksumB64(t, "crc32", body)}, sent: []byte("other"), code: "BadDigest"},
		{name: "hex-sha1-bad", hash: hexSHA(body), hdr: map[string]string{"X-Amz-Checksum-Sha1": checksumB64(t, "sha1", []byte("x"))}, sent: body, code: "BadDigest"},
		{name: "content-md5-bad", hash: UnsignedPayload, hdr: map[string]string{"Content-MD5": md5sum}, sent: body, code: "BadDigest"},
		{name: "content-md5-ok", hash: UnsignedPayload, hdr: map[string]string{"Content-MD5": md5B64([]byte("hello\n"))}, sent: []byte("hello\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := build(tc.hash, tc.hdr, tc.sent)
			orig := r.Body
			res, err := streamVerifier().Verify(r)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if tc.passthr && res.Body != orig {
				t.Error("Body is not r.Body")
			}
			got, err := io.ReadAll(res.Body)
			if tc.code == "" {
				if err != nil || !bytes.Equal(got, tc.sent) {
					t.Fatalf("read %q, %v", got, err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Code != tc.code || se.Status != http.StatusBadRequest {
				t.Fatalf("err %v, want %s", err, tc.code)
			}
		})
	}
	t.Run("invalid-checksum-header", func(t *testing.T) {
		r := build(UnsignedPayload, map[string]string{"X-Amz-Checksum-Crc32": "AAAA"}, body)
		_, err := streamVerifier().Verify(r)
		var se *Error
		if !errors.As(err, &se) || se.Code != "InvalidRequest" {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("complete-multipart-skips-object-checksum", func(t *testing.T) {
		r := httptest.NewRequest("POST", "http://s3.local/b/k?uploadId=abc", nil)
		r.Header.Set("X-Amz-Checksum-Crc32", "AAAAAA==-3")
		xml := []byte("<CompleteMultipartUpload/>")
		Sign(r, Credentials{testAK, testSecret, ""}, "us-east-1", "s3", streamNow, hexSHA(xml), SignOptions{SignBody: true})
		r.Body = io.NopCloser(bytes.NewReader(xml))
		res, err := streamVerifier().Verify(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(res.Body); err != nil {
			t.Fatal(err)
		}
	})
}

func md5B64(b []byte) string {
	s := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

func TestCRC64NVME(t *testing.T) {
	h := newCRC64NVME()
	h.Write([]byte("123456789"))
	if got := h.Sum64(); got != 0xAE8B14860A799888 {
		t.Fatalf("crc64nvme(123456789) = %#x", got)
	}
	// Slicing-by-8 and byte-at-a-time agree on random splits.
	data := make([]byte, 10_000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	whole := newCRC64NVME()
	whole.Write(data)
	for range 20 {
		parts := newCRC64NVME()
		rest := data
		for len(rest) > 0 {
			n := min(len(rest), rng.IntN(100))
			parts.Write(rest[:n])
			rest = rest[n:]
		}
		if parts.Sum64() != whole.Sum64() {
			t.Fatal("split mismatch")
		}
	}
	if h.Size() != 8 || h.BlockSize() != 1 || len(h.Sum(nil)) != 8 {
		t.Fatal("hash interface")
	}
	h.Reset()
	if h.Sum64() != 0 {
		t.Fatal("reset")
	}
}
