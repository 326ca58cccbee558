package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
)

// Credentials are an access key pair with an optional session token.
type Credentials struct{ AccessKeyID, SecretAccessKey, SessionToken string }

// Payload hash sentinels (x-amz-content-sha256 values).
const (
	// UnsignedPayload means the payload is not covered by the signature.
	UnsignedPayload = "UNSIGNED-PAYLOAD"
	// StreamingPayload is aws-chunked with a signature on every chunk.
	StreamingPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	// StreamingPayloadTrailer is aws-chunked with chunk signatures and a
	// signed trailer chunk.
	StreamingPayloadTrailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	// StreamingUnsignedTrailer is aws-chunked without chunk signatures,
	// followed by trailing headers (usually an x-amz-checksum-*).
	StreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	// EmptySHA256 is the hex SHA-256 of the empty string.
	EmptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

const (
	algorithm      = "AWS4-HMAC-SHA256"
	amzDateFormat  = "20060102T150405Z"
	scopeFormat    = "20060102"
	scopeTerminal  = "aws4_request"
	maxPresignSecs = 7 * 24 * 60 * 60
)

// Header and query parameter names.
const (
	hdrAuthorization    = "Authorization"
	hdrAmzDate          = "X-Amz-Date"
	hdrSecurityToken    = "X-Amz-Security-Token"
	hdrContentSHA256    = "X-Amz-Content-Sha256"
	hdrDecodedLength    = "X-Amz-Decoded-Content-Length"
	hdrTrailer          = "X-Amz-Trailer"
	hdrContentMD5       = "Content-Md5"
	qAlgorithm          = "X-Amz-Algorithm"
	qCredential         = "X-Amz-Credential"
	qDate               = "X-Amz-Date"
	qExpires            = "X-Amz-Expires"
	qSignedHeaders      = "X-Amz-SignedHeaders"
	qSignature          = "X-Amz-Signature"
	qSecurityToken      = "X-Amz-Security-Token"
	qContentSHA256      = "X-Amz-Content-Sha256"
	trailerSignatureKey = "x-amz-trailer-signature"
)

// Error is a verification failure with its S3 error code and HTTP status.
// Verify returns SignatureDoesNotMatch 403, InvalidAccessKeyId 403 (Lookup
// returned an empty secret), AccessDenied 403 (anonymous, unsigned x-amz-*
// headers, bad date, presigned URL expired "Request has expired" or not yet
// valid), RequestTimeTooSkewed 403, AuthorizationHeaderMalformed 400,
// AuthorizationQueryParametersError 400, InvalidRequest 400 and
// InvalidArgument 400; Result.Body returns XAmzContentSHA256Mismatch 400,
// BadDigest 400, InvalidDigest 400, IncompleteBody 400, InvalidRequest 400
// and SignatureDoesNotMatch 403 (chunk signatures). A Lookup may return its
// own *Error (InvalidAccessKeyId, ExpiredToken 400, InvalidToken 400...).
// Message is safe to show to the client: it never contains a secret, a
// session token or a computed signature.
type Error struct {
	Code, Message string
	Status        int

	cause error // underlying I/O error, for logs; may be nil
}

// Error implements error.
func (e *Error) Error() string {
	if e.cause != nil {
		return "sigv4: " + e.Code + ": " + e.Message + ": " + e.cause.Error()
	}
	return "sigv4: " + e.Code + ": " + e.Message
}

// Unwrap returns the I/O error that caused e, if any.
func (e *Error) Unwrap() error { return e.cause }

func newError(code string, status int, format string, args ...any) *Error {
	return &Error{Code: code, Status: status, Message: fmt.Sprintf(format, args...)}
}

func errAccessDenied(format string, args ...any) *Error {
	return newError("AccessDenied", http.StatusForbidden, format, args...)
}

func errSignatureMismatch() *Error {
	return newError("SignatureDoesNotMatch", http.StatusForbidden,
		"The request signature we calculated does not match the signature you provided. Check your key and signing method.")
}

func errChunkSignatureMismatch() *Error {
	return newError("SignatureDoesNotMatch", http.StatusForbidden,
		"The chunk signature we calculated does not match the signature you provided.")
}

func errHeaderMalformed(format string, args ...any) *Error {
	return newError("AuthorizationHeaderMalformed", http.StatusBadRequest, format, args...)
}

func errQueryMalformed(format string, args ...any) *Error {
	return newError("AuthorizationQueryParametersError", http.StatusBadRequest, format, args...)
}

func errInvalidRequest(format string, args ...any) *Error {
	return newError("InvalidRequest", http.StatusBadRequest, format, args...)
}

func errInvalidArgument(format string, args ...any) *Error {
	return newError("InvalidArgument", http.StatusBadRequest, format, args...)
}

func errIncompleteBody(cause error) *Error {
	e := newError("IncompleteBody", http.StatusBadRequest,
		"The request body terminated unexpectedly or is shorter than declared.")
	e.cause = cause
	return e
}

func errBadDigest(name string) *Error {
	return newError("BadDigest", http.StatusBadRequest,
		"The %s you specified did not match the calculated checksum.", name)
}

// hmacSHA256 returns HMAC-SHA256(key, data).
func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// deriveKey returns the SigV4 signing key for a credential scope.
func deriveKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, scopeTerminal)
}

// scopeString returns "<date>/<region>/<service>/aws4_request".
func scopeString(date, region, service string) string {
	return date + "/" + region + "/" + service + "/" + scopeTerminal
}

// stringToSign builds the request string to sign from the hex SHA-256 of
// the canonical request.
func stringToSign(amzDate, scope, canonicalHash string) string {
	return algorithm + "\n" + amzDate + "\n" + scope + "\n" + canonicalHash
}

// sha256Hex returns the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
