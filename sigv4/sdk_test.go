package sigv4

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsv4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const (
	testAK     = "AKIAIOSFODNN7EXAMPLE"
	testSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testToken  = "FQoGZXIvYXdzEXAMPLE//session+token=="
)

// verifyServer runs Verify on every request and records the outcome.
type verifyServer struct {
	*httptest.Server
	v *Verifier

	mu   sync.Mutex
	res  *Result
	body []byte
	err  error
}

func newVerifyServer(t *testing.T, v *Verifier, tls bool) *verifyServer {
	t.Helper()
	vs := &verifyServer{v: v}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := v.Verify(r)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(res.Body)
		}
		vs.mu.Lock()
		vs.res, vs.body, vs.err = res, body, err
		vs.mu.Unlock()
		if err != nil {
			status := http.StatusInternalServerError
			var se *Error
			if errors.As(err, &se) {
				status = se.Status
			}
			http.Error(w, err.Error(), status)
			return
		}
		w.Header().Set("ETag", `"etag"`)
		w.WriteHeader(http.StatusOK)
	})
	if tls {
		vs.Server = httptest.NewTLSServer(h)
	} else {
		vs.Server = httptest.NewServer(h)
	}
	t.Cleanup(vs.Close)
	return vs
}

func (vs *verifyServer) last() (*Result, []byte, error) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.res, vs.body, vs.err
}

func testLookup(ctx context.Context, ak, token string) (string, error) {
	if ak != testAK {
		return "", &Error{Code: "InvalidAccessKeyId", Status: http.StatusForbidden, Message: "unknown key"}
	}
	if token != "" && token != testToken {
		return "", &Error{Code: "InvalidToken", Status: http.StatusBadRequest, Message: "bad token"}
	}
	return testSecret, nil
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestAWSSDKSigner signs requests with aws-sdk-go-v2's signer, sends them
// over HTTP and verifies them; it also checks that Sign produces the same
// Authorization header as the SDK.
func TestAWSSDKSigner(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	cases := []struct {
		name    string
		s3      bool
		presign bool
		token   bool
		method  string
		path    string // URL path (decoded)
		rawPath string // optional wire form
		query   string
		headers map[string]string
		body    string
		differs bool // Sign and the SDK legitimately sign differently
	}{
		{name: "get", method: "GET", path: "/v1/config", query: "warehouse=wh"},
		{name: "post-json", method: "POST", path: "/v1/namespaces", body: `{"namespace":["a"]}`,
			headers: map[string]string{"Content-Type": "application/json", "X-Iceberg-Access-Delegation": "vended-credentials"}},
		{name: "escaped-path", method: "GET", path: "/v1/namespaces/a\x1fb/tables/t x", rawPath: "/v1/namespaces/a%1Fb/tables/t%20x"},
		{name: "glue-colons", method: "GET", path: "/iceberg/v1/catalogs/123456789012:s3tablescatalog:bucket/namespaces", query: "pageToken=a+b&x=%E1%88%B4"},
		{name: "session-token", token: true, method: "DELETE", path: "/v1/namespaces/ns", headers: map[string]string{"Original-Authorization": "Bearer abc"}},
		// aws-sdk-go-v2 sorts the query by decoded names; the spec (and Sign)
		// by encoded names: the signatures differ, both verify.
		{name: "query-order", method: "GET", path: "/x", query: "a0=1&a%3A=2&%E1%88%B4=3&B=4", differs: true},
		{name: "multi-value", method: "GET", path: "/x", query: "b=2&a=1&a=0&c", headers: map[string]string{"X-Amz-Meta-A": "  a   b  "}},
		{name: "s3-put", s3: true, method: "PUT", path: "/bucket/dir/key with space+plus:colon.txt", body: "hello world",
			headers: map[string]string{"Content-Type": "text/plain", "X-Amz-Meta-Owner": "me"}},
		{name: "s3-get-token", s3: true, token: true, method: "GET", path: "/bucket/k", query: "list-type=2&prefix=a%2Fb&delimiter=%2F"},
		{name: "presign-get", presign: true, method: "GET", path: "/v1/config", query: "warehouse=w"},
		{name: "presign-s3-get", s3: true, presign: true, method: "GET", path: "/bucket/some key/ü.parquet"},
		{name: "presign-s3-put-token", s3: true, presign: true, token: true, method: "PUT", path: "/bucket/k", body: "data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			service := "execute-api"
			if tc.s3 {
				service = "s3"
			}
			v := &Verifier{Lookup: testLookup, Service: service, Region: "eu-west-1", Normalize: !tc.s3}
			vs := newVerifyServer(t, v, false)
			u, _ := url.Parse(vs.URL)
			u.Path, u.RawPath, u.RawQuery = tc.path, tc.rawPath, tc.query
			build := func() *http.Request {
				r, err := http.NewRequest(tc.method, u.String(), strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				if tc.body == "" {
					r.Body, r.GetBody, r.ContentLength = http.NoBody, nil, 0
				}
				for k, val := range tc.headers {
					r.Header.Set(k, val)
				}
				return r
			}
			creds := aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSecret}
			if tc.token {
				creds.SessionToken = testToken
			}
			signer := awsv4.NewSigner(func(o *awsv4.SignerOptions) { o.DisableURIPathEscaping = tc.s3 })
			r := build()
			payload := hexSHA([]byte(tc.body))
			if tc.s3 {
				r.Header.Set("X-Amz-Content-Sha256", payload)
			}
			if tc.presign {
				if tc.s3 {
					payload = UnsignedPayload
				}
				q := r.URL.Query()
				q.Set("X-Amz-Expires", "300")
				r.URL.RawQuery = q.Encode()
				r.Header.Del("X-Amz-Content-Sha256")
				signed, hdr, err := signer.PresignHTTP(context.Background(), creds, r, payload, service, "eu-west-1", now)
				if err != nil {
					t.Fatal(err)
				}
				pr, err := http.NewRequest(tc.method, signed, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				for k, vals := range hdr {
					if !strings.EqualFold(k, "host") {
						pr.Header[k] = vals
					}
				}
				r = pr
			} else {
				if err := signer.SignHTTP(context.Background(), creds, r, payload, service, "eu-west-1", now); err != nil {
					t.Fatal(err)
				}
				// Our signer must produce the same header (paths here need no normalization).
				mine := build()
				if tc.s3 {
					mine.Header.Set("X-Amz-Content-Sha256", payload)
				}
				c := Credentials{creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken}
				if err := Sign(mine, c, "eu-west-1", service, now, payload, SignOptions{Normalize: !tc.s3}); err != nil {
					t.Fatal(err)
				}
				if tc.differs {
					if mine.Header.Get("Authorization") == r.Header.Get("Authorization") {
						t.Error("expected different signatures")
					}
				} else if tc.s3 && r.URL.EscapedPath() != mine.URL.EscapedPath() {
					// The SDK signs Go's escaping of the path, we sign (and send) the
					// fully encoded one: both verify, the signatures differ.
					t.Logf("paths differ: sdk %s, ours %s", r.URL.EscapedPath(), mine.URL.EscapedPath())
				} else if got, want := mine.Header.Get("Authorization"), r.Header.Get("Authorization"); got != want {
					t.Errorf("Authorization\n got %s\nwant %s", got, want)
				}
				sendAndCheck(t, vs, mine, tc.body)
			}
			sendAndCheck(t, vs, r, tc.body)
			res, _, _ := vs.last()
			if res.Presigned != tc.presign || (res.SessionToken != "") != tc.token || res.Region != "eu-west-1" {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func sendAndCheck(t *testing.T, vs *verifyServer, r *http.Request, body string) {
	t.Helper()
	resp, err := vs.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	res, got, verr := vs.last()
	if resp.StatusCode != http.StatusOK || verr != nil {
		t.Fatalf("status %d %s (verify error %v)", resp.StatusCode, msg, verr)
	}
	if string(got) != body {
		t.Errorf("body %q, want %q", got, body)
	}
	if res.AccessKeyID != testAK {
		t.Errorf("result %+v", res)
	}
}

// TestPresignRoundTrip presigns with Presign and verifies over HTTP.
func TestPresignRoundTrip(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, s3 := range []bool{false, true} {
		service := "execute-api"
		if s3 {
			service = "s3"
		}
		t.Run(service, func(t *testing.T) {
			v := &Verifier{Lookup: testLookup, Service: service, Normalize: !s3}
			vs := newVerifyServer(t, v, false)
			r, _ := http.NewRequest("PUT", vs.URL+"/bucket/a b/c%2Fd?x=1", bytes.NewReader([]byte("payload")))
			r.Header.Set("Content-Type", "application/octet-stream")
			u, err := Presign(r, Credentials{testAK, testSecret, testToken}, "us-east-1", service, now, time.Hour, SignOptions{Normalize: !s3})
			if err != nil {
				t.Fatal(err)
			}
			pr, _ := http.NewRequest("PUT", u, bytes.NewReader([]byte("payload")))
			pr.Header.Set("Content-Type", "application/octet-stream")
			sendAndCheck(t, vs, pr, "payload")
			// A header that was signed must be sent unchanged.
			pr, _ = http.NewRequest("PUT", u, bytes.NewReader([]byte("payload")))
			pr.Header.Set("Content-Type", "text/plain")
			resp, err := vs.Client().Do(pr)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("changed header: status %d", resp.StatusCode)
			}
		})
	}
}

func ExampleVerifier() {
	v := &Verifier{
		Service: "s3",
		Lookup: func(ctx context.Context, ak, token string) (string, error) {
			return testSecret, nil // look the key up in a store
		},
	}
	r := httptest.NewRequest("GET", "http://localhost/bucket/key", nil)
	Sign(r, Credentials{AccessKeyID: testAK, SecretAccessKey: testSecret}, "us-east-1", "s3", time.Now(), EmptySHA256, SignOptions{SignBody: true})
	res, err := v.Verify(r)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.AccessKeyID, res.Region)
	// Output: AKIAIOSFODNN7EXAMPLE us-east-1
}
