package sigv4

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// tamperTransport flips one bit of payload data in every request body after
// the SDK has signed it (in the first chunk of an aws-chunked body).
type tamperTransport struct{ next http.RoundTripper }

func (tt tamperTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		i := len(b) / 2
		if r.Header.Get("Content-Encoding") == "aws-chunked" {
			i = bytes.Index(b, []byte("\r\n")) + 2
		}
		if len(b) > 0 {
			b[i] ^= 0x01
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
	}
	return tt.next.RoundTrip(r)
}

// TestAWSSDKS3Client runs the real aws-sdk-go-v2 S3 client against a server
// that verifies with Verify and reads the body to EOF: over plain HTTP and
// over TLS (where current SDKs send STREAMING-UNSIGNED-PAYLOAD-TRAILER).
func TestAWSSDKS3Client(t *testing.T) {
	big := bytes.Repeat([]byte("floe-"), 300_000) // 1.5 MB
	for _, tls := range []bool{false, true} {
		name := "http"
		if tls {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			v := &Verifier{Lookup: testLookup, Service: "s3", Region: "us-east-1"}
			vs := newVerifyServer(t, v, tls)
			testS3Presign(t, vs)
			for _, calc := range []aws.RequestChecksumCalculation{aws.RequestChecksumCalculationWhenSupported, aws.RequestChecksumCalculationWhenRequired} {
				testS3Client(t, vs, name, calc, big)
			}
		})
	}
}

func testS3Client(t *testing.T, vs *verifyServer, name string, calc aws.RequestChecksumCalculation, big []byte) {
	client := func(tamper bool, token string) *s3.Client {
		hc := vs.Client()
		if tamper {
			hc = &http.Client{Transport: tamperTransport{hc.Transport}}
		}
		return s3.New(s3.Options{
			Region:                     "us-east-1",
			BaseEndpoint:               aws.String(vs.URL),
			UsePathStyle:               true,
			HTTPClient:                 hc,
			RetryMaxAttempts:           1,
			RequestChecksumCalculation: calc,
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSecret, SessionToken: token}, nil
			}),
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bodies := map[string]func() io.Reader{
		"small":       func() io.Reader { return bytes.NewReader([]byte("hello floe")) },
		"empty":       func() io.Reader { return bytes.NewReader(nil) },
		"big":         func() io.Reader { return bytes.NewReader(big) },
		"unseekable":  func() io.Reader { return io.MultiReader(strings.NewReader("hello "), strings.NewReader("floe")) },
		"unseekable2": func() io.Reader { return io.MultiReader(bytes.NewReader(big)) },
	}
	want := map[string]int{"small": 10, "empty": 0, "big": len(big), "unseekable": 10, "unseekable2": len(big)}
	for bname, mk := range bodies {
		if strings.HasPrefix(bname, "unseekable") && name == "http" {
			continue // the SDK must hash the body over plain HTTP: it needs to seek
		}
		for _, token := range []string{"", testToken} {
			in := &s3.PutObjectInput{Bucket: aws.String("bucket"), Key: aws.String("dir/" + bname + ".bin"), Body: mk()}
			if strings.HasPrefix(bname, "unseekable") {
				in.ContentLength = aws.Int64(int64(want[bname]))
			}
			_, err := client(false, token).PutObject(ctx, in)
			res, got, verr := vs.last()
			if err != nil {
				t.Fatalf("PutObject %s: %v (verify: %v)", bname, err, verr)
			}
			if len(got) != want[bname] || res.SessionToken != token {
				t.Fatalf("PutObject %s: server got %d bytes, token %q", bname, len(got), res.SessionToken)
			}
			if token == "" {
				t.Logf("checksums %v: PutObject %s over %s: payload %s, decoded length %d, trailer %v", calc, bname, name, res.PayloadHash, res.DecodedLength, res.Trailer)
			}
		}
		if bname == "empty" {
			continue
		}
		_, err := client(true, "").PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket"), Key: aws.String("k"), Body: mk(), ContentLength: aws.Int64(int64(want[bname]))})
		res, _, verr := vs.last()
		if res != nil && res.PayloadHash == UnsignedPayload && res.Body == nil {
			continue
		}
		var se *Error
		switch {
		case errors.As(verr, &se):
			if err == nil {
				t.Fatalf("tampered PutObject %s: the client saw success", bname)
			}
			t.Logf("checksums %v: tampered PutObject %s over %s: %s", calc, bname, name, se.Code)
		case verr == nil && res.PayloadHash == UnsignedPayload && len(res.Trailer) == 0:
			// Nothing signed or declared covers the payload: TLS protects it.
			t.Logf("checksums %v: tampered PutObject %s over %s: undetectable (UNSIGNED-PAYLOAD, no checksum)", calc, bname, name)
		default:
			t.Fatalf("tampered PutObject %s: err %v, verify %v", bname, err, verr)
		}
	}
	_, err := client(false, "").UploadPart(ctx, &s3.UploadPartInput{
		Bucket: aws.String("bucket"), Key: aws.String("k"), UploadId: aws.String("u1"),
		PartNumber: aws.Int32(1), Body: bytes.NewReader(big),
	})
	if err != nil {
		t.Fatalf("UploadPart: %v", err)
	}
	if _, got, _ := vs.last(); len(got) != len(big) {
		t.Fatalf("UploadPart: %d bytes", len(got))
	}
}

// testS3Presign sends URLs from the SDK's presign client.
func testS3Presign(t *testing.T, vs *verifyServer) {
	pc := s3.NewPresignClient(s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(vs.URL),
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSecret, SessionToken: testToken}, nil
		}),
	}))
	ctx := context.Background()
	get, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket"), Key: aws.String("dir/a b+c.parquet"),
		ResponseContentType: aws.String("application/x-parquet")})
	if err != nil {
		t.Fatal(err)
	}
	put, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket"), Key: aws.String("dir/new.json"),
		ContentType: aws.String("application/json")})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		method, url string
		hdr         http.Header
		body        string
	}{{get.Method, get.URL, get.SignedHeader, ""}, {put.Method, put.URL, put.SignedHeader, `{"a":1}`}} {
		r, err := http.NewRequest(p.method, p.url, strings.NewReader(p.body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range p.hdr {
			if !strings.EqualFold(k, "host") {
				r.Header[k] = v
			}
		}
		if p.body == "" {
			r.Body, r.ContentLength = http.NoBody, 0
		}
		sendAndCheck(t, vs, r, p.body)
		if res, _, _ := vs.last(); !res.Presigned || res.SessionToken != testToken {
			t.Errorf("presigned %s: %+v", p.method, res)
		}
	}
}
