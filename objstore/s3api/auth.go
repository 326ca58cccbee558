package s3api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/netallow"
	"github.com/floe-lake/floe/sigv4"
	"github.com/floe-lake/floe/vend"
)

// authenticate verifies the request's signature (header or presigned query
// auth) and resolves its credential to a session. It sets q.sess (nil when the
// server runs without auth), q.body, the payload reader the operation must
// consume instead of r.Body (it checks what was signed or declared while it
// is read), q.bodyLen (-1 when unknown) and q.trailer.
func (s *Server) authenticate(q *request) error {
	r := q.r
	if s.opts.Resolver == nil {
		var err error
		q.body, q.bodyLen, err = unauthenticatedBody(r)
		return err
	}
	var (
		sess vend.Session
		got  bool
	)
	v := sigv4.Verifier{
		Service: "s3",
		Region:  s.region,
		Now:     s.now,
		MaxSkew: s.opts.MaxSkew,
		Lookup: func(ctx context.Context, accessKeyID, sessionToken string) (string, error) {
			se, secret, err := s.opts.Resolver.Resolve(ctx, accessKeyID, sessionToken)
			if err != nil {
				return "", fmt.Errorf("s3api: resolve credential: %w", err)
			}
			sess, got = se, true
			return secret, nil
		},
	}
	res, err := v.Verify(r)
	if err != nil {
		if r.Header.Get("Authorization") == "" && !r.URL.Query().Has("X-Amz-Algorithm") {
			return errorf("AccessDenied", http.StatusForbidden, "Access Denied: anonymous requests are refused. "+
				"Sign requests with the storage credentials the catalog vends with a table; it vends them only to "+
				"principals holding SELECT on the table (see the table's floe.storage-access config when none came)")
		}
		return err
	}
	if !got {
		// The verifier accepted a request without looking up a credential:
		// never treat that as authenticated.
		return errorf("AccessDenied", http.StatusForbidden, "Access Denied")
	}
	if s.opts.Revoked != nil {
		if err := s.opts.Revoked(&sess); err != nil {
			q.sess, q.revoked = &sess, floe.PublicMessage(err) // audited with its session and token id
			return errorf("AccessDenied", http.StatusForbidden, q.revoked)
		}
	}
	q.sess, q.body, q.bodyLen, q.trailer = &sess, res.Body, res.DecodedLength, res.Trailer
	if q.body == nil {
		q.body = r.Body
	}
	// The principal's allowlist travels with the credential.
	if len(sess.AllowedCIDRs) > 0 {
		if a := clientAddr(r); !netallow.ContainsAny(sess.AllowedCIDRs, a) {
			return fromKind(netallow.DeniedPrincipal(a, sess.Principal))
		}
	}
	return nil
}

// clientAddr is the client address the listener resolved (behind trusted
// proxies), or the peer's address when no listener guard ran.
func clientAddr(r *http.Request) netip.Addr {
	if a, ok := netallow.ClientFrom(r.Context()); ok {
		return a
	}
	return netallow.AddrOf(stringAddr(r.RemoteAddr))
}

// stringAddr is a net.Addr of a "host:port" string.
type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

// unauthenticatedBody returns the payload of a request on a server without
// auth. Signatures are not checked, but an aws-chunked body must still be
// decoded. Signed chunks cannot be decoded without the secret.
func unauthenticatedBody(r *http.Request) (io.ReadCloser, int64, error) {
	mode := r.Header.Get("X-Amz-Content-Sha256")
	switch mode {
	case sigv4.StreamingUnsignedTrailer, sigv4.StreamingPayload, sigv4.StreamingPayloadTrailer:
		n := int64(-1)
		if v := r.Header.Get("X-Amz-Decoded-Content-Length"); v != "" {
			d, err := strconv.ParseInt(v, 10, 64)
			if err != nil || d < 0 {
				return nil, -1, errorf("InvalidArgument", http.StatusBadRequest, "invalid x-amz-decoded-content-length")
			}
			n = d
		}
		return newChunkedReader(r.Body, n), n, nil
	}
	return r.Body, r.ContentLength, nil
}

// authorize reports an AccessDenied error unless sess (nil = no auth) allows
// op on bucket/key. For list operations key is the list prefix.
func authorize(sess *vend.Session, op, bucketName, key string, write bool) error {
	if sess == nil || sess.Allows(bucketName, key, write) {
		return nil
	}
	return errAccessDenied(sess, op, bucketName, key, write)
}

// authorizeBucket allows bucket-level metadata operations (HeadBucket,
// GetBucketLocation, ...) to a session with any grant in the bucket.
func authorizeBucket(sess *vend.Session, op, bucketName string) error {
	if sess == nil || sessionHasBucket(sess, bucketName) {
		return nil
	}
	return errorf("AccessDenied", http.StatusForbidden, fmt.Sprintf("%s; %s on s3://%s needs a grant in the bucket",
		describeGrants(sess), op, bucketName))
}

func sessionHasBucket(sess *vend.Session, bucketName string) bool {
	for _, g := range sess.Grants {
		if g.Bucket == bucketName {
			return true
		}
	}
	return false
}

// errAccessDenied explains a denial: what the credential allows and what the
// operation needed, e.g. "credential for crm.accounts allows read on
// s3://floe/crm/accounts-0a1b/; PutObject on s3://floe/crm/x needs write".
func errAccessDenied(sess *vend.Session, op, bucketName, key string, write bool) *apiError {
	need := "read"
	if write {
		need = "write"
	}
	return errorf("AccessDenied", http.StatusForbidden, fmt.Sprintf("%s; %s on s3://%s/%s needs %s",
		describeGrants(sess), op, bucketName, key, need))
}

// errListDenied is the AccessDenied error of a listing the session may not
// make (read-objects grants read objects by key and never list).
func errListDenied(sess *vend.Session, op, bucketName, prefix string) *apiError {
	return errorf("AccessDenied", http.StatusForbidden, fmt.Sprintf("%s; %s on s3://%s with prefix %q needs list (read, not read-objects)",
		describeGrants(sess), op, bucketName, prefix))
}

func describeGrants(sess *vend.Session) string {
	who := sess.Table
	if who == "" {
		who = sess.Principal
	}
	if who == "" {
		who = sess.AccessKeyID
	}
	var b strings.Builder
	fmt.Fprintf(&b, "credential for %s allows ", who)
	if len(sess.Grants) == 0 {
		b.WriteString("nothing")
	}
	for i, g := range sess.Grants {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s on s3://%s/%s", g.Access, g.Bucket, g.Prefix)
	}
	return b.String()
}
