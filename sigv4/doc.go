// Package sigv4 implements AWS Signature Version 4 (SigV4) for HTTP: signing
// requests with the Authorization header or as presigned URLs, and verifying
// such requests on the server side, including the payload modes S3 clients
// use (hex SHA-256, UNSIGNED-PAYLOAD and the three aws-chunked streaming
// encodings) and the x-amz-checksum-* integrity headers and trailers.
//
// # Canonical URI
//
// Two flavours of the canonical URI exist. S3 (Normalize=false) signs the
// path exactly once URI-encoded: Floe encodes the decoded request path with
// the AWS rules (every byte except A-Z a-z 0-9 - . _ ~ and / becomes %XX).
// Every other service (Normalize=true) removes "." and ".." segments and
// empty segments from the path as it appears on the wire (already
// percent-encoded) and URI-encodes the result again, so "%20" is signed as
// "%2520". On the client side "the path on the wire" is URL.Opaque when it
// is set and URL.EscapedPath otherwise, as in aws-sdk-go-v2.
//
// # Verification
//
// [Verifier.Verify] checks the signature, the credential scope, the clock
// and then wraps the body in a reader that checks the payload against what
// was signed or declared while it streams. The reader reports a mismatch as
// an [*Error] from Read before it returns io.EOF, so a consumer that only
// commits data after a clean io.EOF never commits a bad payload.
//
// The package was written from the AWS documentation and the public SigV4
// test suite; it does not derive from any server implementation.
package sigv4
