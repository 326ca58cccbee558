package sigv4

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// Defaults of Verifier.
const (
	// DefaultMaxSkew is the clock skew accepted by default.
	DefaultMaxSkew = 15 * time.Minute
	// DefaultMaxPresignExpiry is the longest X-Amz-Expires accepted by
	// default (the S3 limit).
	DefaultMaxPresignExpiry = 7 * 24 * time.Hour
	// DefaultMaxBufferedBody is the default of Verifier.MaxBufferedBody.
	DefaultMaxBufferedBody = 16 << 20
)

// Parsing limits for untrusted authentication input.
const (
	maxAuthorizationLen = 16 << 10
	maxSignedHeaders    = 256
)

// Lookup returns the secret for an access key (and the session token the
// request carried, "" if none). A Lookup error is returned by Verify
// wrapped with %w, unchanged otherwise (callers map their own errors; an
// *Error returned by Lookup, such as InvalidAccessKeyId, is found with
// errors.As). Lookup must check that the session token belongs to the key.
type Lookup func(ctx context.Context, accessKeyID, sessionToken string) (secret string, err error)

// Verifier checks SigV4 requests. The zero values of the optional fields
// select the defaults; a Verifier is safe for concurrent use.
type Verifier struct {
	Lookup    Lookup
	Service   string // e.g. "s3"; requests signed for another service are rejected
	Region    string // "" = accept any region in the credential scope
	Normalize bool   // false for S3

	Now              func() time.Time // default time.Now
	MaxSkew          time.Duration    // default 15 min (header auth; presigned: X-Amz-Date must not be in the future beyond skew)
	MaxPresignExpiry time.Duration    // default 7 days

	// MaxBufferedBody bounds the body that is read into memory to hash it
	// when a request to a service other than s3 has a body but no
	// x-amz-content-sha256 (default 16 MiB).
	MaxBufferedBody int64
	// AllowUnsignedHeaders accepts x-amz-* headers that the signature does
	// not cover. By default such a request is AccessDenied, as in S3
	// (x-amz-date and x-amz-content-sha256 are exempt: both are bound by
	// the string to sign).
	AllowUnsignedHeaders bool
	// UnsignedSessionToken accepts a session token that the client added
	// after signing (X-Amz-Security-Token not covered by the signature), as
	// some AWS IoT clients do. S3 and the AWS SDKs sign the token.
	UnsignedSessionToken bool
}

// Result describes a verified request.
type Result struct {
	AccessKeyID, SessionToken, Region string
	Presigned                         bool
	SignedAt                          time.Time
	// Body replaces r.Body: it yields the decoded payload (aws-chunked
	// decoded) and returns an *Error from Read when the payload does not
	// match what was signed/declared: sha256 mismatch
	// (XAmzContentSHA256Mismatch), bad chunk signature
	// (SignatureDoesNotMatch), malformed chunks (IncompleteBody/InvalidRequest),
	// x-amz-checksum-* header or trailer mismatch (BadDigest), short body vs
	// x-amz-decoded-content-length (IncompleteBody). Checks happen before
	// the final io.EOF is returned, so a consumer that writes to a temp file
	// and only commits after reading io.EOF never commits a bad payload.
	// Body is r.Body unchanged only when there is nothing to check.
	Body io.ReadCloser
	// DecodedLength is the payload length (x-amz-decoded-content-length for
	// aws-chunked, else Content-Length), -1 when unknown.
	DecodedLength int64
	// PayloadHash is the payload hash that was signed: hex SHA-256 or one
	// of the sentinels (UnsignedPayload, StreamingPayload, ...).
	PayloadHash string
	// ContentEncoding is the request's Content-Encoding without the
	// aws-chunked transfer coding: the encoding of the decoded payload, to
	// store as object metadata ("" when none).
	ContentEncoding string
	// Trailer holds the trailing headers of an aws-chunked body that
	// declared them in x-amz-trailer (canonical header keys). The values
	// are set once Body has returned io.EOF; before that they are empty.
	Trailer http.Header
}

// authInfo is what a request says about its own authentication.
type authInfo struct {
	accessKey, date, region, service string
	names                            []string // signed headers
	signedHeaders                    string
	signature                        []byte
	amzDate                          string
	t                                time.Time
	token                            string
	presigned                        bool
	expires                          time.Duration
}

func (a *authInfo) scope() string { return scopeString(a.date, a.region, a.service) }

// payloadMode is how the body relates to the signature.
type payloadMode int

const (
	payloadHex payloadMode = iota
	payloadUnsigned
	payloadStreamSigned
	payloadStreamSignedTrailer
	payloadStreamUnsignedTrailer
	payloadBuffer // hash the body to learn the payload hash
)

// IsSigned reports whether r carries SigV4 authentication, in the
// Authorization header or in the query (X-Amz-Algorithm, X-Amz-Credential
// or X-Amz-Signature). It does not validate anything.
func IsSigned(r *http.Request) bool {
	if strings.HasPrefix(r.Header.Get(hdrAuthorization), algorithm) {
		return true
	}
	if r.URL == nil {
		return false
	}
	return hasQueryAuth(parseQuery(r.URL.RawQuery))
}

func hasQueryAuth(params []queryParam) bool {
	for _, p := range params {
		switch p.key {
		case qAlgorithm, qCredential, qSignature:
			return true
		}
	}
	return false
}

// Verify authenticates r (header auth "Authorization: AWS4-HMAC-SHA256 ..."
// or presigned query auth X-Amz-Algorithm/Credential/Date/Expires/
// SignedHeaders/Signature[/Security-Token]). Anonymous requests (no auth at
// all) return *Error{Code:"AccessDenied",Status:403}. An Original-Authorization
// header (Iceberg Java relocates a previous Authorization there) is an
// ordinary header. Verify reads r.Body only when it must hash it (see
// MaxBufferedBody); otherwise the body is read through Result.Body.
func (v *Verifier) Verify(r *http.Request) (*Result, error) {
	if v.Lookup == nil || v.Service == "" {
		return nil, errors.New("sigv4: Verifier needs Lookup and Service")
	}
	if r == nil || r.URL == nil {
		return nil, errInvalidRequest("Missing request.")
	}
	params := parseQuery(r.URL.RawQuery)
	authz := r.Header.Values(hdrAuthorization)
	queryAuth := hasQueryAuth(params)
	var a authInfo
	var e *Error
	switch {
	case len(authz) > 0 && queryAuth:
		return nil, errInvalidArgument("Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified.")
	case len(authz) > 1:
		return nil, errHeaderMalformed("The authorization header is malformed; more than one Authorization header.")
	case len(authz) == 1:
		a, e = parseAuthorization(authz[0])
		if e == nil {
			e = headerDate(r, &a)
		}
		a.token = r.Header.Get(hdrSecurityToken)
	case queryAuth:
		a, e = parsePresign(params)
		if e == nil {
			e = v.checkExpiry(&a)
		}
		if a.token == "" {
			a.token = r.Header.Get(hdrSecurityToken)
		}
	default:
		return nil, errAccessDenied("Access Denied")
	}
	if e != nil {
		return nil, e
	}
	if e := v.checkScope(&a); e != nil {
		return nil, e
	}
	if e := v.checkTime(&a); e != nil {
		return nil, e
	}
	if e := v.checkUnsignedHeaders(r, &a); e != nil {
		return nil, e
	}
	mode, payloadHash, sum, e := v.payload(r, &a, params)
	if e != nil {
		return nil, e
	}
	sums, e := headerDigests(r, params)
	if e != nil {
		return nil, e
	}

	secret, err := v.Lookup(r.Context(), a.accessKey, a.token)
	if err != nil {
		return nil, fmt.Errorf("sigv4: look up access key %q: %w", a.accessKey, err)
	}
	if secret == "" {
		return nil, newError("InvalidAccessKeyId", http.StatusForbidden,
			"The AWS Access Key Id you provided does not exist in our records.")
	}

	var buffered []byte
	if mode == payloadBuffer {
		buffered, payloadHash, e = v.readBody(r)
		if e != nil {
			return nil, e
		}
	}
	key := deriveKey(secret, a.date, a.region, a.service)
	if !v.signatureMatches(r, &a, params, key, payloadHash) {
		return nil, errSignatureMismatch()
	}

	res := &Result{
		AccessKeyID:   a.accessKey,
		SessionToken:  a.token,
		Region:        a.region,
		Presigned:     a.presigned,
		SignedAt:      a.t,
		DecodedLength: -1,
		PayloadHash:   payloadHash,
	}
	res.ContentEncoding, _ = payloadEncoding(r.Header)
	if r.ContentLength >= 0 {
		res.DecodedLength = r.ContentLength
	}
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	switch mode {
	case payloadHex:
		if len(sums) == 0 && payloadHash == EmptySHA256 && body == http.NoBody {
			res.Body = body
		} else {
			res.Body = newCheckReader(body, sum, sums)
		}
	case payloadUnsigned:
		if len(sums) == 0 {
			res.Body = body
		} else {
			res.Body = newCheckReader(body, nil, sums)
		}
	case payloadBuffer:
		res.DecodedLength = int64(len(buffered))
		rc := readCloser{bytes.NewReader(buffered), body}
		if len(sums) == 0 {
			res.Body = rc
		} else {
			res.Body = newCheckReader(rc, nil, sums)
		}
	default:
		if e := v.chunkedBody(r, &a, mode, key, sums, body, res); e != nil {
			return nil, e
		}
	}
	return res, nil
}

// readCloser reads from one source and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

func (v *Verifier) chunkedBody(r *http.Request, a *authInfo, mode payloadMode, key []byte, sums []*digest, body io.ReadCloser, res *Result) *Error {
	o := chunkedOptions{sums: sums, want: -1}
	if s := r.Header.Get(hdrDecodedLength); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return errInvalidArgument("Invalid x-amz-decoded-content-length.")
		}
		o.want = n
	}
	res.DecodedLength = o.want
	if mode != payloadStreamUnsignedTrailer {
		o.signer = newChunkSigner(key, a.amzDate, a.scope(), a.signature)
	}
	if mode != payloadStreamSigned {
		o.trailers = true
		for _, hv := range r.Header.Values(hdrTrailer) {
			for name := range strings.SplitSeq(hv, ",") {
				if name = strings.ToLower(strings.TrimSpace(name)); name != "" {
					o.declared = append(o.declared, name)
				}
			}
		}
		if len(o.declared) > 0 {
			o.trailer = make(http.Header, len(o.declared))
			for _, name := range o.declared {
				o.trailer[textproto.CanonicalMIMEHeaderKey(name)] = nil
			}
		}
	}
	c, e := newChunkedReader(body, o)
	if e != nil {
		return e
	}
	res.Body = c
	res.Trailer = o.trailer
	return nil
}

// readBody reads a body of bounded size to hash it.
func (v *Verifier) readBody(r *http.Request) ([]byte, string, *Error) {
	limit := v.MaxBufferedBody
	if limit <= 0 {
		limit = DefaultMaxBufferedBody
	}
	tooLarge := errInvalidRequest("The request body is too large to verify without x-amz-content-sha256.")
	if r.ContentLength > limit {
		return nil, "", tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		e := errIncompleteBody(err)
		return nil, "", e
	}
	if int64(len(data)) > limit {
		return nil, "", tooLarge
	}
	return data, sha256Hex(data), nil
}

// payloadEncoding returns the Content-Encoding of r without aws-chunked and
// whether aws-chunked was present.
func payloadEncoding(h http.Header) (string, bool) {
	var rest []string
	chunked := false
	for _, v := range h.Values("Content-Encoding") {
		for p := range strings.SplitSeq(v, ",") {
			switch p = strings.TrimSpace(p); {
			case strings.EqualFold(p, "aws-chunked"):
				chunked = true
			case p != "":
				rest = append(rest, p)
			}
		}
	}
	return strings.Join(rest, ","), chunked
}

// payload determines the payload mode and the payload hash to sign with.
// A body with Content-Encoding aws-chunked must use a streaming mode, or
// its chunk framing would be taken for data.
func (v *Verifier) payload(r *http.Request, a *authInfo, params []queryParam) (payloadMode, string, []byte, *Error) {
	mode, hash, sum, e := v.payloadHash(r, a, params)
	if e != nil {
		return mode, hash, sum, e
	}
	if a.presigned && mode == payloadUnsigned && r.Header.Get(hdrContentSHA256) == StreamingUnsignedTrailer {
		// A presigned upload whose client still frames the body with
		// unsigned aws-chunked and a checksum trailer.
		mode = payloadStreamUnsignedTrailer
	}
	streaming := mode == payloadStreamSigned || mode == payloadStreamSignedTrailer || mode == payloadStreamUnsignedTrailer
	if _, chunked := payloadEncoding(r.Header); chunked && !streaming {
		return 0, "", nil, errInvalidRequest("Content-Encoding aws-chunked requires a STREAMING-* x-amz-content-sha256.")
	}
	return mode, hash, sum, nil
}

func (v *Verifier) payloadHash(r *http.Request, a *authInfo, params []queryParam) (payloadMode, string, []byte, *Error) {
	declared := r.Header.Get(hdrContentSHA256)
	if a.presigned {
		declared = ""
		for _, p := range params {
			if p.key == qContentSHA256 {
				declared = p.value
			}
		}
	}
	if declared == "" {
		empty := r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0
		isS3 := strings.EqualFold(v.Service, "s3")
		switch {
		case a.presigned && isS3:
			return payloadUnsigned, UnsignedPayload, nil, nil
		case empty:
			sum, _ := hex.DecodeString(EmptySHA256)
			return payloadHex, EmptySHA256, sum, nil
		case isS3:
			return 0, "", nil, errInvalidRequest("Missing required header for this request: x-amz-content-sha256")
		default:
			return payloadBuffer, "", nil, nil
		}
	}
	switch declared {
	case UnsignedPayload:
		return payloadUnsigned, declared, nil, nil
	case StreamingPayload:
		return payloadStreamSigned, declared, nil, nil
	case StreamingPayloadTrailer:
		return payloadStreamSignedTrailer, declared, nil, nil
	case StreamingUnsignedTrailer:
		return payloadStreamUnsignedTrailer, declared, nil, nil
	}
	if len(declared) == 64 {
		if sum, err := hex.DecodeString(declared); err == nil {
			return payloadHex, declared, sum, nil
		}
	}
	return 0, "", nil, errInvalidArgument("x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.")
}

// signatureMatches recomputes the signature and compares it in constant
// time. When the first canonical form does not match it also tries the
// forms other correct clients produce: the path exactly as sent (S3), the
// query sorted by decoded names (aws-sdk-go-v2) and, with
// UnsignedSessionToken, the query without X-Amz-Security-Token.
func (v *Verifier) signatureMatches(r *http.Request, a *authInfo, params []queryParam, key []byte, payloadHash string) bool {
	values := make([]string, len(a.names))
	for i, n := range a.names {
		values[i] = joinValues(headerValues(r, n))
	}
	skip := ""
	if a.presigned {
		skip = qSignature
	}
	wire := requestWirePath(r)
	cr := canonicalRequest{
		method:        r.Method,
		uri:           canonicalURI(wire, v.Normalize),
		query:         canonicalQuery(params, skip, false),
		names:         a.names,
		values:        values,
		signedHeaders: a.signedHeaders,
		payloadHash:   payloadHash,
	}
	scope := a.scope()
	try := func() bool {
		sig := hmacSHA256(key, stringToSign(a.amzDate, scope, cr.hash()))
		return hmac.Equal(sig, a.signature)
	}
	if try() {
		return true
	}
	uris := []string{cr.uri}
	if !v.Normalize && wire != cr.uri {
		uris = append(uris, wire)
	}
	queries := []string{cr.query}
	if q := canonicalQuery(params, skip, true); q != cr.query {
		queries = append(queries, q)
	}
	if v.UnsignedSessionToken && a.presigned && a.token != "" {
		var rest []queryParam
		for _, p := range params {
			if p.key != qSecurityToken {
				rest = append(rest, p)
			}
		}
		queries = append(queries, canonicalQuery(rest, skip, false), canonicalQuery(rest, skip, true))
	}
	for i, u := range uris {
		for j, q := range queries {
			if i == 0 && j == 0 {
				continue
			}
			cr.uri, cr.query = u, q
			if try() {
				return true
			}
		}
	}
	return false
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) checkScope(a *authInfo) *Error {
	malformed := errHeaderMalformed
	if a.presigned {
		malformed = errQueryMalformed
	}
	if a.date != a.t.Format(scopeFormat) {
		return malformed("Invalid credential date %q. Date is not the same as X-Amz-Date: %q.", a.date, a.t.Format(scopeFormat))
	}
	if a.service != v.Service {
		return malformed("The authorization is malformed; incorrect service %q. This endpoint belongs to %q.", a.service, v.Service)
	}
	if v.Region != "" && a.region != v.Region {
		return malformed("The authorization is malformed; the region %q is wrong; expecting %q.", a.region, v.Region)
	}
	return nil
}

func (v *Verifier) checkExpiry(a *authInfo) *Error {
	limit := v.MaxPresignExpiry
	if limit <= 0 {
		limit = DefaultMaxPresignExpiry
	}
	if a.expires > limit {
		return errQueryMalformed("X-Amz-Expires must be less than %d seconds.", int64(limit/time.Second)+1)
	}
	return nil
}

func (v *Verifier) checkTime(a *authInfo) *Error {
	skew := v.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew
	}
	now := v.now()
	if a.presigned {
		if a.t.After(now.Add(skew)) {
			return errAccessDenied("Request is not valid yet")
		}
		if now.After(a.t.Add(a.expires)) {
			return errAccessDenied("Request has expired")
		}
		return nil
	}
	if d := now.Sub(a.t); d > skew || d < -skew {
		return newError("RequestTimeTooSkewed", http.StatusForbidden,
			"The difference between the request time and the current time is too large.")
	}
	return nil
}

// checkUnsignedHeaders rejects x-amz-* headers that the signature does not
// cover.
func (v *Verifier) checkUnsignedHeaders(r *http.Request, a *authInfo) *Error {
	if v.AllowUnsignedHeaders {
		return nil
	}
	for k := range r.Header {
		if len(k) < 6 || !strings.EqualFold(k[:6], "x-amz-") {
			continue
		}
		lk := strings.ToLower(k)
		switch lk {
		case "x-amz-date", "x-amz-content-sha256":
			continue
		case "x-amz-security-token":
			if v.UnsignedSessionToken {
				continue
			}
		}
		if !containsString(a.names, lk) {
			return errAccessDenied("There were headers present in the request which were not signed: %s", lk)
		}
	}
	return nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// headerDate sets the request time of a header-authenticated request from
// X-Amz-Date or, failing that, Date.
func headerDate(r *http.Request, a *authInfo) *Error {
	bad := errAccessDenied("AWS authentication requires a valid Date or x-amz-date header")
	if s := r.Header.Get(hdrAmzDate); s != "" {
		t, err := time.Parse(amzDateFormat, s)
		if err != nil {
			return bad
		}
		a.t, a.amzDate = t, s
		return nil
	}
	if s := r.Header.Get("Date"); s != "" {
		t, err := http.ParseTime(s)
		if err != nil {
			return bad
		}
		a.t, a.amzDate = t.UTC(), t.UTC().Format(amzDateFormat)
		return nil
	}
	return bad
}

// parseAuthorization parses an "AWS4-HMAC-SHA256 Credential=...,
// SignedHeaders=..., Signature=..." header value.
func parseAuthorization(v string) (authInfo, *Error) {
	var a authInfo
	if len(v) > maxAuthorizationLen {
		return a, errHeaderMalformed("The authorization header is malformed; it is too long.")
	}
	rest, ok := strings.CutPrefix(v, algorithm)
	if !ok {
		return a, errInvalidRequest("The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.")
	}
	if rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return a, errHeaderMalformed("The authorization header is malformed; expected AWS4-HMAC-SHA256 followed by a space.")
	}
	var cred, signed, sig string
	var haveCred, haveSigned, haveSig bool
	for field := range strings.SplitSeq(rest, ",") {
		field = strings.TrimSpace(field)
		k, val, ok := strings.Cut(field, "=")
		if !ok {
			return a, errHeaderMalformed("The authorization header is malformed; the field %q is not of the form key=value.", truncate(field))
		}
		var dup bool
		switch k {
		case "Credential":
			dup, haveCred, cred = haveCred, true, val
		case "SignedHeaders":
			dup, haveSigned, signed = haveSigned, true, val
		case "Signature":
			dup, haveSig, sig = haveSig, true, val
		default:
			return a, errHeaderMalformed("The authorization header is malformed; unknown field %q.", truncate(k))
		}
		if dup {
			return a, errHeaderMalformed("The authorization header is malformed; the field %s appears twice.", k)
		}
	}
	if !haveCred || !haveSigned || !haveSig {
		return a, errHeaderMalformed("The authorization header is malformed; it needs Credential, SignedHeaders and Signature.")
	}
	if e := parseCredential(&a, cred, errHeaderMalformed); e != nil {
		return a, e
	}
	if e := parseSignedHeaders(&a, signed, errHeaderMalformed); e != nil {
		return a, e
	}
	if e := parseSignature(&a, sig, errHeaderMalformed); e != nil {
		return a, e
	}
	return a, nil
}

// parsePresign reads the authentication query parameters of a presigned
// request.
func parsePresign(params []queryParam) (authInfo, *Error) {
	a := authInfo{presigned: true}
	got := map[string]string{}
	for _, p := range params {
		switch p.key {
		case qAlgorithm, qCredential, qDate, qExpires, qSignedHeaders, qSignature, qSecurityToken:
			if _, dup := got[p.key]; dup {
				return a, errQueryMalformed("The query parameter %s appears twice.", p.key)
			}
			got[p.key] = p.value
		}
	}
	for _, k := range []string{qAlgorithm, qCredential, qDate, qExpires, qSignedHeaders, qSignature} {
		if _, ok := got[k]; !ok {
			return a, errQueryMalformed("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	if got[qAlgorithm] != algorithm {
		return a, errQueryMalformed("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\".")
	}
	if e := parseCredential(&a, got[qCredential], errQueryMalformed); e != nil {
		return a, e
	}
	if e := parseSignedHeaders(&a, got[qSignedHeaders], errQueryMalformed); e != nil {
		return a, e
	}
	if e := parseSignature(&a, got[qSignature], errQueryMalformed); e != nil {
		return a, e
	}
	t, err := time.Parse(amzDateFormat, got[qDate])
	if err != nil {
		return a, errQueryMalformed("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\".")
	}
	a.t, a.amzDate = t, got[qDate]
	exp := got[qExpires]
	secs, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || len(exp) > 10 {
		return a, errQueryMalformed("X-Amz-Expires should be a number.")
	}
	if secs <= 0 {
		return a, errQueryMalformed("X-Amz-Expires must be positive.")
	}
	a.expires = time.Duration(secs) * time.Second
	a.token = got[qSecurityToken]
	return a, nil
}

// parseCredential parses "<key>/<yyyymmdd>/<region>/<service>/aws4_request".
func parseCredential(a *authInfo, v string, malformed func(string, ...any) *Error) *Error {
	parts := strings.Split(v, "/")
	n := len(parts)
	if n < 5 {
		return malformed("The credential %q is malformed; expected \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".", truncate(v))
	}
	if parts[n-1] != scopeTerminal {
		return malformed("The credential is malformed; incorrect terminal %q. This endpoint uses \"aws4_request\".", truncate(parts[n-1]))
	}
	a.accessKey = strings.Join(parts[:n-4], "/")
	a.date, a.region, a.service = parts[n-4], parts[n-3], parts[n-2]
	if a.accessKey == "" || a.region == "" || a.service == "" {
		return malformed("The credential %q is malformed.", truncate(v))
	}
	if _, err := time.Parse(scopeFormat, a.date); err != nil || len(a.date) != 8 {
		return malformed("The credential date %q is malformed.", truncate(a.date))
	}
	return nil
}

// parseSignedHeaders parses "host;x-amz-date;...": lower-case, unique
// names that include host.
func parseSignedHeaders(a *authInfo, v string, malformed func(string, ...any) *Error) *Error {
	names := strings.Split(v, ";")
	if len(names) > maxSignedHeaders {
		return malformed("Too many signed headers.")
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" || !isLowerToken(n) {
			return malformed("The signed header name %q is invalid.", truncate(n))
		}
		if seen[n] {
			return malformed("The signed header %q appears twice.", n)
		}
		seen[n] = true
	}
	if !seen["host"] {
		return malformed("The host header must be signed.")
	}
	a.names, a.signedHeaders = names, v
	return nil
}

func isLowerToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func parseSignature(a *authInfo, v string, malformed func(string, ...any) *Error) *Error {
	sig, err := hex.DecodeString(v)
	if err != nil || len(sig) != 32 {
		return malformed("The signature must be 64 hexadecimal characters.")
	}
	a.signature = sig
	return nil
}

// truncate shortens untrusted input quoted in error messages.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
