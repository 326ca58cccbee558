package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SignOptions tune signing. Normalize=true: non-S3 services (path
// normalized, URI double-encoded). S3 uses Normalize=false. SignBody adds
// the X-Amz-Content-Sha256 header with the payload hash (S3 requires it).
type SignOptions struct {
	Normalize bool
	SignBody  bool
}

// ignoredHeader reports whether a (lower-case) header is left out of the
// signature, as in aws-sdk-go-v2: proxies and transports change them.
func ignoredHeader(lower string) bool {
	switch lower {
	case "authorization", "user-agent", "x-amzn-trace-id", "expect", "transfer-encoding":
		return true
	}
	return false
}

// Sign signs r in place (sets X-Amz-Date, X-Amz-Security-Token if any,
// X-Amz-Content-Sha256 with o.SignBody, and Authorization). payloadHash is
// the hex SHA-256 of the body or one of the sentinels; "" hashes the body
// (r.GetBody is used when set, else the body is read and replaced).
//
// Every header in r.Header except Authorization, User-Agent,
// X-Amzn-Trace-Id, Expect and Transfer-Encoding is signed, plus host and a
// positive content-length. With Normalize=false (S3), r.URL.RawPath may be
// set so that the path sent is exactly the canonical, fully encoded one.
func Sign(r *http.Request, c Credentials, region, service string, t time.Time, payloadHash string, o SignOptions) error {
	_, err := sign(r, c, region, service, t, payloadHash, o)
	return err
}

// signature records the intermediate results of signing, for tests.
type signature struct {
	canonical, stringToSign, signature string
}

func sign(r *http.Request, c Credentials, region, service string, t time.Time, payloadHash string, o SignOptions) (signature, error) {
	if err := checkSignArgs(r, c, region, service); err != nil {
		return signature{}, err
	}
	if payloadHash == "" {
		h, err := bodyHash(r)
		if err != nil {
			return signature{}, err
		}
		payloadHash = h
	}
	t = t.UTC()
	amzDate := t.Format(amzDateFormat)
	date := t.Format(scopeFormat)
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header.Set(hdrAmzDate, amzDate)
	if c.SessionToken != "" {
		r.Header.Set(hdrSecurityToken, c.SessionToken)
	}
	if o.SignBody {
		r.Header.Set(hdrContentSHA256, payloadHash)
	}
	names, values := signableHeaders(r)
	cr := canonicalRequest{
		method:        r.Method,
		uri:           clientCanonicalURI(r.URL, o.Normalize, true),
		query:         canonicalQuery(parseQuery(r.URL.RawQuery), "", false),
		names:         names,
		values:        values,
		signedHeaders: strings.Join(names, ";"),
		payloadHash:   payloadHash,
	}
	if cr.method == "" {
		cr.method = http.MethodGet
	}
	scope := scopeString(date, region, service)
	key := deriveKey(c.SecretAccessKey, date, region, service)
	sts := stringToSign(amzDate, scope, cr.hash())
	sig := hex.EncodeToString(hmacSHA256(key, sts))
	r.Header.Set(hdrAuthorization, algorithm+" Credential="+c.AccessKeyID+"/"+scope+
		", SignedHeaders="+cr.signedHeaders+", Signature="+sig)
	return signature{cr.String(), sts, sig}, nil
}

// Presign returns the presigned URL (query auth, X-Amz-Expires=expires in
// seconds, 1 s to 7 days). The request is not modified. All headers of r
// (as for Sign) are signed and must be sent with the URL; none is moved
// into the query. For service "s3" the payload is UNSIGNED-PAYLOAD; other
// services sign the body's hash. o.SignBody is ignored.
func Presign(r *http.Request, c Credentials, region, service string, t time.Time, expires time.Duration, o SignOptions) (string, error) {
	u, _, err := presign(r, c, region, service, t, expires, o)
	return u, err
}

func presign(r *http.Request, c Credentials, region, service string, t time.Time, expires time.Duration, o SignOptions) (string, signature, error) {
	if err := checkSignArgs(r, c, region, service); err != nil {
		return "", signature{}, err
	}
	secs := int64(expires / time.Second)
	if secs < 1 || secs > maxPresignSecs {
		return "", signature{}, fmt.Errorf("sigv4: presign expiry %v out of range (1s to 7 days)", expires)
	}
	payloadHash := UnsignedPayload
	if !strings.EqualFold(service, "s3") {
		h, err := bodyHash(r)
		if err != nil {
			return "", signature{}, err
		}
		payloadHash = h
	}
	t = t.UTC()
	amzDate := t.Format(amzDateFormat)
	date := t.Format(scopeFormat)
	scope := scopeString(date, region, service)
	names, values := signableHeaders(r)
	signedHeaders := strings.Join(names, ";")

	params := parseQuery(r.URL.RawQuery)
	kept := params[:0:0]
	for _, p := range params {
		switch p.key {
		case qAlgorithm, qCredential, qDate, qExpires, qSignedHeaders, qSignature, qSecurityToken:
			continue
		}
		kept = append(kept, p)
	}
	kept = append(kept,
		queryParam{qAlgorithm, algorithm},
		queryParam{qCredential, c.AccessKeyID + "/" + scope},
		queryParam{qDate, amzDate},
		queryParam{qExpires, strconv.FormatInt(secs, 10)},
		queryParam{qSignedHeaders, signedHeaders},
	)
	if c.SessionToken != "" {
		kept = append(kept, queryParam{qSecurityToken, c.SessionToken})
	}
	u := *r.URL
	cr := canonicalRequest{
		method:        r.Method,
		uri:           clientCanonicalURI(&u, o.Normalize, true),
		query:         canonicalQuery(kept, "", false),
		names:         names,
		values:        values,
		signedHeaders: signedHeaders,
		payloadHash:   payloadHash,
	}
	if cr.method == "" {
		cr.method = http.MethodGet
	}
	key := deriveKey(c.SecretAccessKey, date, region, service)
	sts := stringToSign(amzDate, scope, cr.hash())
	sig := hex.EncodeToString(hmacSHA256(key, sts))
	u.RawQuery = cr.query + "&" + qSignature + "=" + sig
	u.Fragment, u.RawFragment = "", ""
	if u.Host == "" {
		u.Host = r.Host
	}
	return u.String(), signature{cr.String(), sts, sig}, nil
}

func checkSignArgs(r *http.Request, c Credentials, region, service string) error {
	switch {
	case r == nil || r.URL == nil:
		return errors.New("sigv4: sign: request or URL is nil")
	case c.AccessKeyID == "" || c.SecretAccessKey == "":
		return errors.New("sigv4: sign: empty access key or secret")
	case strings.Contains(c.AccessKeyID, "/"):
		return errors.New("sigv4: sign: access key contains '/'")
	case region == "" || service == "" || strings.Contains(region, "/") || strings.Contains(service, "/"):
		return fmt.Errorf("sigv4: sign: invalid region %q or service %q", region, service)
	}
	return nil
}

// clientCanonicalURI returns the canonical URI for a client request to u.
// In S3 mode with fix set, u.RawPath is set so that the path on the wire
// equals the canonical URI.
func clientCanonicalURI(u *url.URL, normalize, fix bool) string {
	wire := urlWirePath(u)
	uri := canonicalURI(wire, normalize)
	if !normalize && fix && u.Opaque == "" && wire != uri {
		if dec, err := url.PathUnescape(uri); err == nil && dec == u.Path {
			u.RawPath = uri
		}
	}
	return uri
}

// signableHeaders returns the sorted lower-case names of the headers Sign
// covers and their canonical values.
func signableHeaders(r *http.Request) (names, values []string) {
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	m := make(map[string][]string, len(r.Header)+2)
	m["host"] = []string{host}
	if r.ContentLength > 0 {
		m["content-length"] = []string{strconv.FormatInt(r.ContentLength, 10)}
	}
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if ignoredHeader(lk) || lk == "host" || lk == "content-length" {
			continue
		}
		m[lk] = append(m[lk], vs...)
	}
	names = make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	values = make([]string, len(names))
	for i, n := range names {
		values[i] = joinValues(m[n])
	}
	return names, values
}

// bodyHash returns the hex SHA-256 of r's body, restoring the body.
func bodyHash(r *http.Request) (string, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return EmptySHA256, nil
	}
	h := sha256.New()
	if r.GetBody != nil {
		b, err := r.GetBody()
		if err != nil {
			return "", fmt.Errorf("sigv4: get body: %w", err)
		}
		_, err = io.Copy(h, b)
		b.Close()
		if err != nil {
			return "", fmt.Errorf("sigv4: hash body: %w", err)
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	data, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return "", fmt.Errorf("sigv4: read body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)), nil
}
