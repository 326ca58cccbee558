package s3api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/vend"
)

// Resolver turns the access key id and session token a request was signed
// with into the session they stand for and the secret to check the signature
// with. Errors wrapping vend.ErrExpired, vend.ErrInvalidToken or
// vend.ErrUnknownAccessKey become ExpiredToken, InvalidToken and
// InvalidAccessKeyId; other errors are internal. *vend.Embedded implements it.
type Resolver interface {
	Resolve(ctx context.Context, accessKeyID, sessionToken string) (vend.Session, string, error)
}

// AccessEvent describes one request, for the access log. It is emitted for
// every request, including failed, denied and unauthenticated ones.
type AccessEvent struct {
	Time       time.Time // when the request arrived
	RequestID  string    // x-amz-request-id sent to the client
	ClientAddr string    // remote IP address
	Operation  string    // S3 operation name, e.g. "GetObject"; "Unknown" when the request matched none
	Bucket     string
	Key        string        // object key; for list operations the list prefix
	Session    *vend.Session // nil when unauthenticated
	BytesIn    int64         // request body bytes read (as sent, incl. aws-chunked framing)
	BytesOut   int64         // response body bytes written
	Status     int           // HTTP status; 499 when the client went away before a status was sent
	ErrorCode  string        // S3 error code, "" on success
	Revoked    string        // why Options.Revoked refused the credential, "" if it did not
	Duration   time.Duration
}

// Options configures a Server.
type Options struct {
	// Store holds the buckets. Required.
	Store *bucket.Store
	// Resolver authenticates requests. nil turns authentication OFF: every
	// request is served anonymously with full access. Use that only for an
	// explicitly insecure local demo.
	Resolver Resolver
	// Region is the region clients must sign for; default "us-east-1".
	// Requests signed for another region fail with AuthorizationHeaderMalformed.
	Region string
	// MaxSkew bounds the difference between a signed request's time and Now;
	// default 15 minutes.
	MaxSkew time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Audit, if set, is called once per request after the response was sent.
	// It runs on the request goroutine with a context that is not canceled
	// when the client goes away.
	Audit func(ctx context.Context, e AccessEvent)
	// Logger receives internal errors; default discards.
	Logger *slog.Logger
	// Revoked, if set, is asked about every credential whose signature
	// verified: a non-nil error (whose message is safe to show, such as
	// "credential revoked: token revoked") refuses the request with
	// AccessDenied. It runs on every request: it must be cheap (revoke.List
	// answers from memory without allocating).
	Revoked func(s *vend.Session) error
	// Listed answers, for a credential with read-listed grants
	// (vend.ReadListed), whether the derived snapshot in directory dirKey
	// names the object key (lake/subset.Keys). Nil: such credentials read
	// their grants' prefixes only.
	Listed ListedKeys
}

// ListedKeys says which objects a derived snapshot names.
type ListedKeys interface {
	Contains(ctx context.Context, bucket, dirKey, key string) (bool, error)
}

// Server is Floe's S3-compatible endpoint over a bucket.Store. It serves
// path-style requests (/<bucket>/<key>) and implements http.Handler; mount it
// at the root of its own listener.
type Server struct {
	opts    Options
	store   *bucket.Store
	region  string
	now     func() time.Time
	log     *slog.Logger
	started time.Time
	// keep-alive of slow operations (runSlow)
	keepaliveAfter, keepaliveEvery time.Duration
}

// New returns a Server for o.
func New(o Options) *Server {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.MaxSkew <= 0 {
		o.MaxSkew = 15 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: o, store: o.Store, region: o.Region, now: o.Now, log: o.Logger, started: o.Now(),
		keepaliveAfter: defaultKeepaliveAfter, keepaliveEvery: defaultKeepaliveEvery}
}

// request is the state of one request as it moves through ServeHTTP.
type request struct {
	w       *responseWriter
	r       *http.Request
	id      string
	op      string
	bucket  string
	key     string
	query   url.Values
	sess    *vend.Session
	body    io.ReadCloser // payload to consume (verified when authenticated)
	bodyLen int64         // payload length, -1 unknown
	trailer http.Header   // aws-chunked trailers, filled when body hits io.EOF
	// streamErr records a failure after the response status was sent.
	streamErr error
	// auditKey overrides key in the access event (list prefix).
	auditKey string
	// revoked is why the credential was refused as revoked.
	revoked string
	// noticeHead is a HEAD made with a notice credential (see checkAccess).
	noticeHead bool
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	arrived := s.now()
	q := &request{
		w:       &responseWriter{ResponseWriter: w},
		id:      newRequestID(),
		op:      "Unknown",
		bodyLen: -1,
	}
	in := &countingReader{rc: r.Body}
	if orig := r.Body; orig != nil && orig != http.NoBody {
		r.Body = in
		// net/http decides from r.Body's own type whether an unread body
		// (a refused upload sent with Expect: 100-continue) is drained or
		// the connection closed: give it back its body so a refusal is
		// answered at once, before the client sends the payload.
		defer func() { r.Body = orig }()
	}
	q.r = r
	h := w.Header()
	h.Set("x-amz-request-id", q.id)
	h.Set("Server", "Floe")

	var err error
	defer func() {
		var abort any
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				abort = p // audit, then let net/http abort the connection
				q.streamErr = errors.New("response aborted")
			} else {
				s.log.ErrorContext(r.Context(), "s3api: panic", "panic", p, "request_id", q.id, "op", q.op)
				err = errInternal(fmt.Errorf("panic in handler: %v", p))
			}
		}
		code := ""
		if err != nil {
			code = s.writeError(q, err)
		} else if q.streamErr != nil {
			code = toAPIError(q.streamErr).Code
			s.log.WarnContext(r.Context(), "s3api: failure after the response started", "request_id", q.id, "op", q.op, "err", q.streamErr)
		}
		if s.opts.Audit != nil {
			s.audit(r, q, in.n.Load(), arrived, start, code)
		}
		if abort != nil {
			panic(abort)
		}
	}()
	err = s.serve(q)
}

// audit emits the request's access event.
func (s *Server) audit(r *http.Request, q *request, bytesIn int64, arrived, start time.Time, code string) {
	status := q.w.status
	if status == 0 {
		status = http.StatusOK
	}
	key := q.key
	if q.auditKey != "" {
		key = q.auditKey
	}
	s.opts.Audit(context.WithoutCancel(r.Context()), AccessEvent{
		Time: arrived, RequestID: q.id, ClientAddr: httperr.ClientAddr(r), Operation: q.op,
		Bucket: q.bucket, Key: key, Session: q.sess, BytesIn: bytesIn, BytesOut: q.w.n,
		Status: status, ErrorCode: code, Revoked: q.revoked, Duration: time.Since(start),
	})
}

// serve resolves the operation, authenticates and runs it.
func (s *Server) serve(q *request) error {
	r := q.r
	var err error
	q.bucket, q.key, err = splitPath(r.URL.Path)
	if err != nil {
		return err
	}
	q.query, err = url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return errorf("InvalidArgument", http.StatusBadRequest, "malformed query string")
	}
	op, rerr := route(r.Method, q.bucket, q.key, q.query, r.Header)
	q.op = op.name
	if err := s.authenticate(q); err != nil {
		return err
	}
	if rerr != nil {
		return rerr
	}
	if err := s.checkAccess(q, op); err != nil {
		return err
	}
	return op.fn(s, r.Context(), q)
}

// splitPath splits a path-style request path into bucket and key.
func splitPath(p string) (bucketName, key string, err error) {
	if !strings.HasPrefix(p, "/") {
		return "", "", errorf("InvalidURI", http.StatusBadRequest, "Couldn't parse the specified URI.")
	}
	p = p[1:]
	bucketName, key, _ = strings.Cut(p, "/")
	if bucketName == "" && key != "" {
		return "", "", errorf("InvalidURI", http.StatusBadRequest, "Couldn't parse the specified URI.")
	}
	return bucketName, key, nil
}

// writeError sends err as an S3 XML error (no body for HEAD and 304) unless
// the response has already started, and returns the S3 code.
func (s *Server) writeError(q *request, err error) string {
	ae := toAPIError(err)
	if ae.Status >= 500 && ae.Status != http.StatusNotImplemented {
		s.log.ErrorContext(q.r.Context(), "s3api: request failed", "request_id", q.id, "op", q.op,
			"bucket", q.bucket, "key", q.key, "status", ae.Status, "err", err)
	} else if ae.Status == http.StatusForbidden {
		s.log.InfoContext(q.r.Context(), "s3api: request denied", "request_id", q.id, "op", q.op,
			"bucket", q.bucket, "key", q.key, "code", ae.Code, "err", err)
	} else {
		s.log.DebugContext(q.r.Context(), "s3api: request rejected", "request_id", q.id, "op", q.op,
			"code", ae.Code, "err", err)
	}
	if q.w.status != 0 {
		return ae.Code // too late: the status line is out
	}
	if ae.Status == 499 {
		q.w.status = 499 // the client is gone; nothing to send
		return ae.Code
	}
	h := q.w.Header()
	if ae.Status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	if q.r.Method == http.MethodHead || ae.Status == http.StatusNotModified {
		h.Del("Content-Type")
		h.Del("Content-Length")
		if ae.Status != http.StatusNotModified {
			// No body: the code and message ride in headers (one line each).
			h.Set("X-Amz-Error-Code", headerSafe(ae.Code))
			h.Set("X-Amz-Error-Message", headerSafe(ae.Message))
		}
		q.w.WriteHeader(ae.Status)
		return ae.Code
	}
	resource := q.r.URL.Path
	body, encErr := encodeXML(errorBody{Code: ae.Code, Message: ae.Message, Resource: resource, RequestID: q.id})
	if encErr != nil {
		body = nil
	}
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", itoa(int64(len(body))))
	q.w.WriteHeader(ae.Status)
	_, _ = q.w.Write(body)
	return ae.Code
}

// headerSafe returns s as a header value: printable ASCII only (others
// become "?"), at most 1024 bytes.
func headerSafe(s string) string {
	b := []byte(s)
	if len(b) > 1024 {
		b = b[:1024]
	}
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

// writeXML sends v as a 200 XML response.
func writeXML(q *request, v any) error {
	body, err := encodeXML(v)
	if err != nil {
		return err
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", itoa(int64(len(body))))
	q.w.WriteHeader(http.StatusOK)
	if _, err := q.w.Write(body); err != nil {
		q.streamErr = err
	}
	return nil
}

// newRequestID returns 16 upper-case hex characters, like S3's request ids.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// responseWriter records the status and body bytes of a response. It keeps
// io.ReaderFrom so that copying a file to the response can use sendfile.
type responseWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// ReadFrom lets io.Copy hand the source to net/http's ReadFrom (sendfile).
func (w *responseWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(writerOnly{w.ResponseWriter}, src)
	}
	w.n += n
	return n, err
}

// Unwrap supports http.ResponseController.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher.
func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type writerOnly struct{ io.Writer }

// countingReader counts the request body bytes read.
// countingReader counts the request body bytes read. The count is atomic:
// the object store reads uploads in a goroutine of its own, which may still
// be finishing a read when the request's audit event is written.
type countingReader struct {
	rc io.ReadCloser
	n  atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.rc.Close() }
