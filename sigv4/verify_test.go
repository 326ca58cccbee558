package sigv4

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

var errNoSuchKey = errors.New("no such key")

// signedReq returns a request signed for s3 at streamNow; edit may change
// it before signing (pre) or after (post).
func signedReq(t *testing.T, method, target string, body []byte, creds Credentials, service, region string, pre, post func(*http.Request)) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	if pre != nil {
		pre(r)
	}
	if err := Sign(r, creds, region, service, streamNow, hexSHA(body), SignOptions{SignBody: service == "s3", Normalize: service != "s3"}); err != nil {
		t.Fatal(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if post != nil {
		post(r)
	}
	return r
}

func TestVerifyErrors(t *testing.T) {
	creds := Credentials{testAK, testSecret, ""}
	s3req := func(pre, post func(*http.Request)) *http.Request {
		return signedReq(t, "PUT", "http://s3.local/b/k", []byte("data"), creds, "s3", "us-east-1", pre, post)
	}
	presigned := func(expires time.Duration, at time.Time, edit func(url.Values)) *http.Request {
		r := httptest.NewRequest("GET", "http://s3.local/b/k", nil)
		u, err := Presign(r, creds, "us-east-1", "s3", at, expires, SignOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			pu, _ := url.Parse(u)
			q := pu.Query()
			edit(q)
			pu.RawQuery = q.Encode()
			u = pu.String()
		}
		return httptest.NewRequest("GET", u, nil)
	}
	set := func(k, v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set(k, v) } }
	cases := []struct {
		name   string
		req    *http.Request
		v      func(*Verifier)
		code   string
		status int
		msg    string
	}{
		{name: "ok", req: s3req(nil, nil)},
		{name: "anonymous", req: httptest.NewRequest("GET", "http://s3.local/b/k", nil), code: "AccessDenied", status: 403},
		{name: "sigv2", req: s3req(nil, set("Authorization", "AWS AKID:c2ln")), code: "InvalidRequest", status: 400},
		{name: "bearer", req: s3req(nil, set("Authorization", "Bearer abc")), code: "InvalidRequest", status: 400},
		{name: "two-mechanisms", req: s3req(nil, func(r *http.Request) { r.URL.RawQuery = "X-Amz-Algorithm=AWS4-HMAC-SHA256" }), code: "InvalidArgument", status: 400},
		{name: "malformed", req: s3req(nil, set("Authorization", "AWS4-HMAC-SHA256 Credential=x")), code: "AuthorizationHeaderMalformed", status: 400},
		{name: "malformed-credential", req: s3req(nil, func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/aws4_request", "/aws5_request", 1))
		}), code: "AuthorizationHeaderMalformed"},
		{name: "host-not-signed", req: s3req(nil, func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "host;", "", 1))
		}), code: "AuthorizationHeaderMalformed"},
		{name: "wrong-service", req: signedReq(t, "GET", "http://s3.local/b/k", nil, creds, "sts", "us-east-1", nil, nil), code: "AuthorizationHeaderMalformed", msg: "incorrect service"},
		{name: "wrong-region", req: s3req(nil, nil), v: func(v *Verifier) { v.Region = "eu-west-1" }, code: "AuthorizationHeaderMalformed", msg: "region"},
		{name: "any-region", req: signedReq(t, "GET", "http://s3.local/b/k", nil, creds, "s3", "ap-south-2", nil, nil)},
		{name: "scope-date", req: s3req(nil, set("X-Amz-Date", streamNow.Add(24*time.Hour).Format(amzDateFormat))), v: func(v *Verifier) {
			v.MaxSkew = 48 * time.Hour
		}, code: "AuthorizationHeaderMalformed", msg: "Date is not the same"},
		{name: "skew-past", req: s3req(nil, nil), v: func(v *Verifier) { v.Now = func() time.Time { return streamNow.Add(16 * time.Minute) } }, code: "RequestTimeTooSkewed", status: 403},
		{name: "skew-future", req: s3req(nil, nil), v: func(v *Verifier) { v.Now = func() time.Time { return streamNow.Add(-16 * time.Minute) } }, code: "RequestTimeTooSkewed"},
		{name: "skew-ok", req: s3req(nil, nil), v: func(v *Verifier) { v.Now = func() time.Time { return streamNow.Add(14 * time.Minute) } }},
		{name: "skew-custom", req: s3req(nil, nil), v: func(v *Verifier) {
			v.Now = func() time.Time { return streamNow.Add(2 * time.Minute) }
			v.MaxSkew = time.Minute
		}, code: "RequestTimeTooSkewed"},
		{name: "no-date", req: s3req(nil, func(r *http.Request) { r.Header.Del("X-Amz-Date") }), code: "AccessDenied"},
		{name: "bad-date", req: s3req(nil, set("X-Amz-Date", "2026-03-01")), code: "AccessDenied"},
		{name: "date-header", req: func() *http.Request {
			r := s3req(nil, nil)
			// Re-sign by hand with only a Date header, as some old clients do.
			r.Header.Del("X-Amz-Date")
			r.Header.Set("Date", streamNow.Format(http.TimeFormat))
			r.Header.Del("Authorization")
			names, values := signableHeaders(r)
			cr := canonicalRequest{method: "PUT", uri: "/b/k", names: names, values: values, signedHeaders: strings.Join(names, ";"), payloadHash: hexSHA([]byte("data"))}
			scope := scopeString("20260301", "us-east-1", "s3")
			sig := hmacSHA256(deriveKey(testSecret, "20260301", "us-east-1", "s3"), stringToSign(streamNow.Format(amzDateFormat), scope, cr.hash()))
			r.Header.Set("Authorization", algorithm+" Credential="+testAK+"/"+scope+",SignedHeaders="+cr.signedHeaders+",Signature="+hexString(sig))
			return r
		}()},
		{name: "unknown-key", req: signedReq(t, "GET", "http://s3.local/b/k", nil, Credentials{"AKIDOTHER", "x", ""}, "s3", "us-east-1", nil, nil), code: "InvalidAccessKeyId", status: 403},
		{name: "lookup-error", req: s3req(nil, nil), v: func(v *Verifier) {
			v.Lookup = func(context.Context, string, string) (string, error) { return "", errNoSuchKey }
		}},
		{name: "empty-secret", req: s3req(nil, nil), v: func(v *Verifier) {
			v.Lookup = func(context.Context, string, string) (string, error) { return "", nil }
		}, code: "InvalidAccessKeyId"},
		{name: "wrong-secret", req: s3req(nil, nil), v: func(v *Verifier) {
			v.Lookup = func(context.Context, string, string) (string, error) { return "other", nil }
		}, code: "SignatureDoesNotMatch", status: 403},
		{name: "unsigned-amz-header", req: s3req(nil, set("X-Amz-Meta-Evil", "1")), code: "AccessDenied", msg: "not signed"},
		{name: "unsigned-amz-header-allowed", req: s3req(nil, set("X-Amz-Meta-Evil", "1")), v: func(v *Verifier) { v.AllowUnsignedHeaders = true }},
		{name: "unsigned-token", req: s3req(nil, set("X-Amz-Security-Token", testToken)), code: "AccessDenied"},
		{name: "unsigned-token-allowed", req: s3req(nil, set("X-Amz-Security-Token", testToken)), v: func(v *Verifier) { v.UnsignedSessionToken = true }},
		{name: "unsigned-other-header", req: s3req(nil, set("X-Forwarded-For", "1.2.3.4"))},
		{name: "original-authorization", req: s3req(set("Original-Authorization", "Bearer tok"), nil)},
		{name: "changed-signed-header", req: s3req(set("Content-Type", "a/b"), set("Content-Type", "a/c")), code: "SignatureDoesNotMatch"},
		{name: "changed-method", req: s3req(nil, func(r *http.Request) { r.Method = "POST" }), code: "SignatureDoesNotMatch"},
		{name: "changed-query", req: s3req(nil, func(r *http.Request) { r.URL.RawQuery = "acl" }), code: "SignatureDoesNotMatch"},
		{name: "missing-content-sha256", req: s3req(nil, func(r *http.Request) { r.Header.Del("X-Amz-Content-Sha256") }), code: "InvalidRequest", msg: "x-amz-content-sha256"},
		{name: "bad-content-sha256", req: s3req(nil, set("X-Amz-Content-Sha256", "abc")), code: "InvalidArgument"},
		{name: "aws-chunked-hex", req: s3req(set("Content-Encoding", "aws-chunked"), nil), code: "InvalidRequest", msg: "aws-chunked"},
		{name: "duplicate-authorization", req: s3req(nil, func(r *http.Request) { r.Header.Add("Authorization", r.Header.Get("Authorization")) }), code: "AuthorizationHeaderMalformed"},
		{name: "presigned-ok", req: presigned(time.Hour, streamNow, nil)},
		{name: "presigned-expired", req: presigned(time.Hour, streamNow.Add(-time.Hour-time.Second), nil), code: "AccessDenied", status: 403, msg: "Request has expired"},
		{name: "presigned-future", req: presigned(time.Hour, streamNow.Add(16*time.Minute), nil), code: "AccessDenied", msg: "not valid yet"},
		{name: "presigned-future-within-skew", req: presigned(time.Hour, streamNow.Add(10*time.Minute), nil)},
		{name: "presigned-too-long", req: presigned(time.Hour, streamNow, func(q url.Values) { q.Set("X-Amz-Expires", "604801") }), code: "AuthorizationQueryParametersError", status: 400},
		{name: "presigned-max-custom", req: presigned(2*time.Hour, streamNow, nil), v: func(v *Verifier) { v.MaxPresignExpiry = time.Hour }, code: "AuthorizationQueryParametersError"},
		{name: "presigned-zero", req: presigned(time.Hour, streamNow, func(q url.Values) { q.Set("X-Amz-Expires", "0") }), code: "AuthorizationQueryParametersError"},
		{name: "presigned-nan", req: presigned(time.Hour, streamNow, func(q url.Values) { q.Set("X-Amz-Expires", "1h") }), code: "AuthorizationQueryParametersError"},
		{name: "presigned-missing", req: presigned(time.Hour, streamNow, func(q url.Values) { q.Del("X-Amz-SignedHeaders") }), code: "AuthorizationQueryParametersError"},
		{name: "presigned-algorithm", req: presigned(time.Hour, streamNow, func(q url.Values) { q.Set("X-Amz-Algorithm", "AWS4-ECDSA-P256-SHA256") }), code: "AuthorizationQueryParametersError"},
		{name: "presigned-duplicate", req: presigned(time.Hour, streamNow, func(q url.Values) { q.Add("X-Amz-Date", q.Get("X-Amz-Date")) }), code: "AuthorizationQueryParametersError"},
		{name: "presigned-extra-param", req: presigned(time.Hour, streamNow, func(q url.Values) { q.Set("response-content-type", "text/html") }), code: "SignatureDoesNotMatch"},
		{name: "presigned-changed-expiry", req: presigned(time.Hour, streamNow, func(q url.Values) { q.Set("X-Amz-Expires", "7200") }), code: "SignatureDoesNotMatch"},
		{name: "nil-lookup", req: s3req(nil, nil), v: func(v *Verifier) { v.Lookup = nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := streamVerifier()
			if tc.v != nil {
				tc.v(v)
			}
			res, err := v.Verify(tc.req)
			switch tc.name {
			case "lookup-error":
				if !errors.Is(err, errNoSuchKey) {
					t.Fatalf("err %v, want the Lookup error wrapped", err)
				}
				return
			case "nil-lookup":
				var se *Error
				if err == nil || errors.As(err, &se) {
					t.Fatalf("err %v, want a configuration error", err)
				}
				return
			}
			if tc.code == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if _, err := io.ReadAll(res.Body); err != nil {
					t.Fatalf("read: %v", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Code != tc.code {
				t.Fatalf("err %v, want %s", err, tc.code)
			}
			if tc.status != 0 && se.Status != tc.status {
				t.Errorf("status %d, want %d", se.Status, tc.status)
			}
			if !strings.Contains(se.Message, tc.msg) {
				t.Errorf("message %q does not mention %q", se.Message, tc.msg)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Error("error leaks the secret")
			}
		})
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

// TestVerifyBufferedBody covers non-S3 requests without
// x-amz-content-sha256, whose body must be hashed before verifying.
func TestVerifyBufferedBody(t *testing.T) {
	body := []byte(`{"namespace":["db"]}`)
	build := func(sent []byte) *http.Request {
		r := httptest.NewRequest("POST", "http://cat.local/v1/namespaces", nil)
		r.Header.Set("Content-Type", "application/json")
		if err := Sign(r, Credentials{testAK, testSecret, ""}, "us-east-1", "glue", streamNow, hexSHA(body), SignOptions{Normalize: true}); err != nil {
			t.Fatal(err)
		}
		r.Body = io.NopCloser(bytes.NewReader(sent))
		r.ContentLength = int64(len(sent))
		return r
	}
	v := &Verifier{Lookup: testLookup, Service: "glue", Normalize: true, Now: func() time.Time { return streamNow }}
	res, err := v.Verify(build(body))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(got, body) || res.DecodedLength != int64(len(body)) || res.PayloadHash != hexSHA(body) {
		t.Fatalf("body %q err %v res %+v", got, err, res)
	}
	if err := res.Body.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(build([]byte(`{"namespace":["dc"]}`)))
	var se *Error
	if !errors.As(err, &se) || se.Code != "SignatureDoesNotMatch" {
		t.Fatalf("changed body: %v", err)
	}
	v.MaxBufferedBody = 8
	_, err = v.Verify(build(body))
	if !errors.As(err, &se) || se.Code != "InvalidRequest" {
		t.Fatalf("large body: %v", err)
	}
}

func TestResultFields(t *testing.T) {
	r := signedReq(t, "PUT", "http://s3.local/b/k", []byte("x"), Credentials{testAK, testSecret, testToken}, "s3", "us-east-1",
		func(r *http.Request) { r.Header.Set("Content-Encoding", "gzip") }, nil)
	res, err := streamVerifier().Verify(r)
	if err != nil {
		t.Fatal(err)
	}
	if res.AccessKeyID != testAK || res.SessionToken != testToken || res.Region != "us-east-1" || res.Presigned ||
		!res.SignedAt.Equal(streamNow) || res.DecodedLength != 1 || res.ContentEncoding != "gzip" {
		t.Errorf("%+v", res)
	}
	p, _ := buildStream(t, []byte("abc"), streamSpec{mode: StreamingUnsignedTrailer, chunk: 2, trailerAlg: "crc32"})
	p.Header.Set("Content-Encoding", "aws-chunked")
	res, err = streamVerifier().Verify(p)
	if err != nil {
		t.Fatal(err)
	}
	if res.ContentEncoding != "" || res.DecodedLength != 3 {
		t.Errorf("%+v", res)
	}
	if v, ok := res.Trailer["X-Amz-Checksum-Crc32"]; !ok || v != nil {
		t.Errorf("trailer before EOF: %v", res.Trailer)
	}
	io.ReadAll(res.Body)
	if res.Trailer.Get("X-Amz-Checksum-Crc32") != checksumB64(t, "crc32", []byte("abc")) {
		t.Errorf("trailer after EOF: %v", res.Trailer)
	}
}

// TestPresignedUnsignedTrailer: a presigned PUT whose client frames the
// body as STREAMING-UNSIGNED-PAYLOAD-TRAILER is decoded, not stored framed.
func TestPresignedUnsignedTrailer(t *testing.T) {
	r0 := httptest.NewRequest("PUT", "http://s3.local/b/k", nil)
	u, err := Presign(r0, Credentials{testAK, testSecret, ""}, "us-east-1", "s3", streamNow, time.Hour, SignOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body := "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:" + checksumB64(t, "crc32", []byte("abc")) + "\r\n\r\n"
	r := httptest.NewRequest("PUT", u, strings.NewReader(body))
	r.Header.Set("X-Amz-Content-Sha256", StreamingUnsignedTrailer)
	r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
	v := streamVerifier()
	v.AllowUnsignedHeaders = true
	res, err := v.Verify(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(res.Body)
	if err != nil || string(got) != "abc" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestIsSigned(t *testing.T) {
	for target, want := range map[string]bool{
		"http://x/b/k":                       false,
		"http://x/b/k?X-Amz-Signature=abc":   true,
		"http://x/b/k?X-Amz-Algorithm=a":     true,
		"http://x/b/k?x-amz-signature=lower": false,
	} {
		if got := IsSigned(httptest.NewRequest("GET", target, nil)); got != want {
			t.Errorf("IsSigned(%s) = %v", target, got)
		}
	}
	r := httptest.NewRequest("GET", "http://x/", nil)
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=...")
	if !IsSigned(r) {
		t.Error("header auth not detected")
	}
	r.Header.Set("Authorization", "Bearer x")
	if IsSigned(r) {
		t.Error("bearer detected as SigV4")
	}
}

func TestCanonicalHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"/":                "/",
		"":                 "/",
		"//a//b//":         "/a/b/",
		"/a/./b/../c":      "/a/c",
		"/a/b/..":          "/a",
		"/..":              "/",
		"/../../a/":        "/a/",
		"/a/%2E%2E/b":      "/a/%2E%2E/b",
		"/iceberg/v1/x:y/": "/iceberg/v1/x:y/",
	} {
		if got := normalizePath(in); got != want {
			t.Errorf("normalizePath(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tc := range []struct {
		wire      string
		normalize bool
		want      string
	}{
		{"/b/a%20b", false, "/b/a%20b"},
		{"/b/a+b:c", false, "/b/a%2Bb%3Ac"},
		{"/b/a%2Fb", false, "/b/a/b"},
		{"/b/%zz", false, "/b/%25zz"},
		{"/b/a%20b", true, "/b/a%2520b"},
		{"/v1/catalogs/1:s3tablescatalog:b/ns", true, "/v1/catalogs/1%3As3tablescatalog%3Ab/ns"},
		{"/ሴ", true, "/%E1%88%B4"},
	} {
		if got := canonicalURI(tc.wire, tc.normalize); got != tc.want {
			t.Errorf("canonicalURI(%q, %v) = %q, want %q", tc.wire, tc.normalize, got, tc.want)
		}
	}
	for raw, want := range map[string]string{
		"b=2&a=1&a=0":                   "a=0&a=1&b=2",
		"a+b=c+d&x":                     "a%20b=c%20d&x=",
		"k=%2F%zz&&=v":                  "=v&k=%252F%25zz",
		"Param-3=3&Param=2&%E1%88%B4=1": "%E1%88%B4=1&Param=2&Param-3=3",
		"a=~._-":                        "a=~._-",
	} {
		if got := canonicalQuery(parseQuery(raw), "", false); got != want {
			t.Errorf("canonicalQuery(%q) = %q, want %q", raw, got, want)
		}
	}
	for in, want := range map[string]string{
		"  a   b  c ": "a b c",
		"\ta\t":       "a",
		`"a   b"`:     `"a b"`,
		"":            "",
	} {
		if got := canonicalValue(in); got != want {
			t.Errorf("canonicalValue(%q) = %q, want %q", in, got, want)
		}
	}
	for uri, want := range map[string]string{
		"/a/b?x=1":           "/a/b",
		"http://h:1/a%20b?c": "/a%20b",
		"https://h":          "/",
		"//double//slash":    "//double//slash",
	} {
		r := &http.Request{RequestURI: uri, URL: &url.URL{Path: "/ignored"}}
		if got := requestWirePath(r); got != want {
			t.Errorf("requestWirePath(%q) = %q, want %q", uri, got, want)
		}
	}
	if got := urlWirePath(&url.URL{Opaque: "//host/p%20q"}); got != "/p%20q" {
		t.Errorf("opaque: %q", got)
	}
}
