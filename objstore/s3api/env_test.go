package s3api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/objstore/s3api"
	"github.com/floe-lake/floe/objstore/sse"
	"github.com/floe-lake/floe/vend"
)

// testBucket is the bucket every test environment serves.
const testBucket = "floe"

// cred is one credential the fake resolver knows.
type cred struct {
	secret, token string
	sess          vend.Session
	err           error // returned by Resolve instead of the session
}

// fakeResolver resolves access keys from a fixed table.
type fakeResolver map[string]cred

func (f fakeResolver) Resolve(_ context.Context, accessKeyID, sessionToken string) (vend.Session, string, error) {
	c, ok := f[accessKeyID]
	if !ok {
		return vend.Session{}, "", fmt.Errorf("fake: %w", vend.ErrUnknownAccessKey)
	}
	if c.err != nil {
		return vend.Session{}, "", fmt.Errorf("fake: %w", c.err)
	}
	if sessionToken != c.token {
		return vend.Session{}, "", fmt.Errorf("fake: %w", vend.ErrInvalidToken)
	}
	return c.sess, c.secret, nil
}

// Credentials of the default test resolver.
const (
	akAdmin    = "FLOEADMINADMINADMI" // read-write on the whole bucket's "t/" and "u/" prefixes
	akTableA   = "FLOETABLEAAAAAAAAA" // read-write on t/a/
	akReadOnly = "FLOEREADONLYAAAAAA" // read on t/a/
	akExpired  = "FLOEEXPIREDAAAAAAA"
	akNotice   = "FLOENOTICEAAAAAAAA" // a notice credential on t/a/
	akInvalid  = "FLOEINVALIDAAAAAAA"
)

func defaultResolver() fakeResolver {
	sess := func(ak, table string, grants ...vend.Grant) vend.Session {
		return vend.Session{ID: "id-" + ak, AccessKeyID: ak, Principal: "alice", Table: table, Grants: grants,
			Expires: time.Now().Add(time.Hour)}
	}
	return fakeResolver{
		akAdmin: {secret: "admin-secret", token: "tok-admin", sess: sess(akAdmin, "",
			vend.Grant{Bucket: testBucket, Prefix: "t/", Access: vend.ReadWrite},
			vend.Grant{Bucket: testBucket, Prefix: "u/", Access: vend.ReadWrite})},
		akTableA: {secret: "a-secret", token: "tok-a", sess: sess(akTableA, "ns.a",
			vend.Grant{Bucket: testBucket, Prefix: "t/a/", Access: vend.ReadWrite})},
		akReadOnly: {secret: "ro-secret", token: "tok-ro", sess: sess(akReadOnly, "ns.a",
			vend.Grant{Bucket: testBucket, Prefix: "t/a/", Access: vend.Read})},
		akNotice: {secret: "n-secret", token: "tok-n", sess: func() vend.Session {
			s := sess(akNotice, "ns.a", vend.Grant{Bucket: testBucket, Prefix: "t/a/", Access: vend.Notice})
			s.Notice = noticeText
			return s
		}()},
		akExpired: {secret: "x", token: "tok-x", err: vend.ErrExpired},
		akInvalid: {secret: "x", token: "tok-x", err: vend.ErrInvalidToken},
	}
}

// env is a running S3 endpoint over a temporary bucket.
type env struct {
	t      testing.TB
	root   string
	store  *bucket.Store
	srv    *httptest.Server
	res    fakeResolver
	mu     sync.Mutex
	events []s3api.AccessEvent
}

type envOptions struct {
	noAuth  bool
	tls     bool
	encrypt bool
	// streamed makes slow operations (CompleteMultipartUpload, CopyObject,
	// UploadPartCopy) always answer with a streamed 200 and keep-alive spaces.
	streamed bool
	// skew shifts the server's clock.
	skew time.Duration
	// revoked is Options.Revoked.
	revoked func(*vend.Session) error
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	dir := t.TempDir()
	bo := bucket.Options{
		Buckets: map[string]string{testBucket: filepath.Join(dir, "data"), "other": filepath.Join(dir, "other")},
		TempDir: filepath.Join(dir, "staging"),
	}
	if o.encrypt {
		key, err := sse.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		kr, err := sse.ParseKeyring([]byte("k1 " + key + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		bo.Encryption = kr
	}
	st, err := bucket.New(bo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := &env{t: t, root: filepath.Join(dir, "data"), store: st, res: defaultResolver()}
	so := s3api.Options{Store: st, Audit: func(_ context.Context, ev s3api.AccessEvent) {
		e.mu.Lock()
		e.events = append(e.events, ev)
		e.mu.Unlock()
	}}
	if !o.noAuth {
		so.Resolver = e.res
	}
	so.Revoked = o.revoked
	if o.skew != 0 {
		so.Now = func() time.Time { return time.Now().Add(o.skew) }
	}
	h := s3api.New(so)
	if o.streamed {
		s3api.SetKeepalive(h, 0, time.Millisecond)
	}
	if o.tls {
		e.srv = httptest.NewTLSServer(h)
	} else {
		e.srv = httptest.NewServer(h)
	}
	t.Cleanup(e.srv.Close)
	return e
}

// client returns an SDK client signing with access key ak.
func (e *env) client(ak string) *s3.Client {
	c := e.res[ak]
	return e.clientWith(ak, c.secret, c.token)
}

func (e *env) clientWith(ak, secret, token string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(e.srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(ak, secret, token),
		HTTPClient:   e.srv.Client(),
		Retryer:      aws.NopRetryer{},
		// What config.LoadDefaultConfig selects: checksums on every upload
		// (aws-chunked with a trailer over TLS) and validation on download.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
	})
}

// takeEvents returns and clears the access events so far.
func (e *env) takeEvents() []s3api.AccessEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev := e.events
	e.events = nil
	return ev
}

// apiCode returns the S3 error code and HTTP status of an SDK error.
func apiCode(err error) (string, int) {
	if err == nil {
		return "", 0
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}

// wantCode fails unless err is an S3 error with code (and status if non-zero).
func wantCode(t testing.TB, err error, code string, status int) {
	t.Helper()
	gotCode, gotStatus := apiCode(err)
	if gotCode != code || (status != 0 && gotStatus != status) {
		t.Fatalf("error = %v (code %q, status %d), want code %q status %d", err, gotCode, gotStatus, code, status)
	}
}

func mustNoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readAll(t testing.TB, rc io.ReadCloser) []byte {
	t.Helper()
	defer rc.Close()
	b, err := io.ReadAll(rc)
	mustNoErr(t, err)
	return b
}

// rawDo sends a request built by the caller (unsigned unless the caller signed it).
func (e *env) rawDo(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := e.srv.Client().Do(req)
	mustNoErr(t, err)
	b := readAll(t, resp.Body)
	return resp, b
}
