package s3api_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/floe-lake/floe/sigv4"
)

func TestSecurity_Grants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	admin, a, ro := e.client(akAdmin), e.client(akTableA), e.client(akReadOnly)
	for _, k := range []string{"t/a/x", "t/b/x", "t/a-sibling/x", "t/ab/x"} {
		_, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k), Body: strings.NewReader("secret " + k)})
		mustNoErr(t, err)
	}
	denied := func(name string, err error, wantInMsg ...string) {
		t.Helper()
		wantCode(t, err, "AccessDenied", 403)
		var ae smithy.APIError
		if errors.As(err, &ae) {
			for _, w := range wantInMsg {
				if !strings.Contains(ae.ErrorMessage(), w) {
					t.Errorf("%s: message %q does not mention %q", name, ae.ErrorMessage(), w)
				}
			}
		}
	}

	// Table credential for t/a/: everything on t/b/ is denied.
	_, err := a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/x")})
	denied("get", err, "credential for ns.a", "read-write on s3://floe/t/a/", "GetObject on s3://floe/t/b/x needs read")
	_, err = a.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/x")})
	wantCode(t, err, "Forbidden", 403) // HEAD errors have no body; the SDK names them by status
	_, err = a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/y"), Body: strings.NewReader("x")})
	denied("put", err, "PutObject on s3://floe/t/b/y needs write")
	_, err = a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/x")})
	denied("delete", err)
	_, err = a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String("t/b/")})
	denied("list other prefix", err, "ListObjectsV2")
	_, err = a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket)})
	denied("list bucket root", err)
	_, err = a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String("t/")})
	denied("list parent", err)
	_, err = a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/stolen"), CopySource: aws.String(testBucket + "/t/b/x")})
	denied("copy from outside", err, "CopyObject (source)")
	_, err = a.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/planted"), CopySource: aws.String(testBucket + "/t/a/x")})
	denied("copy to outside", err)
	_, err = a.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/mp")})
	denied("multipart outside", err)
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("other"), Key: aws.String("t/a/x")})
	denied("other bucket", err)
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("nosuchbucket"), Key: aws.String("t/a/x")})
	denied("missing bucket", err) // authorization first: no existence oracle
	_, err = a.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("other")})
	wantCode(t, err, "Forbidden", 403)
	_, err = a.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(testBucket)})
	denied("list uploads root", err)
	// Dot segments never pass, even when they stay inside the prefix textually.
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/../b/x")})
	if code, st := apiCode(err); st != 403 && st != 400 {
		t.Fatalf("dot-segment key: %v (%s %d)", err, code, st)
	}

	// Allowed operations within the grant; listing "t/a" (no slash) shows only t/a/.
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	mustNoErr(t, err)
	lst, err := a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String("t/a")})
	mustNoErr(t, err)
	if got := keys(lst.Contents); len(got) != 1 || got[0] != "t/a/x" || aws.ToInt32(lst.KeyCount) != 1 {
		t.Fatalf("listing t/a leaked siblings: %v", got)
	}
	lst, err = a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String("t/a"), Delimiter: aws.String("/")})
	mustNoErr(t, err)
	if got := prefixes(lst.CommonPrefixes); len(got) != 1 || got[0] != "t/a/" || len(lst.Contents) != 0 {
		t.Fatalf("delimited listing t/a leaked siblings: %v %v", got, keys(lst.Contents))
	}
	_, err = a.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(testBucket)})
	mustNoErr(t, err)
	lb, err := a.ListBuckets(ctx, &s3.ListBucketsInput{})
	mustNoErr(t, err)
	if len(lb.Buckets) != 1 || aws.ToString(lb.Buckets[0].Name) != testBucket {
		t.Fatalf("ListBuckets shows %+v", lb.Buckets)
	}
	del, err := a.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(testBucket), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("t/b/x")}, {Key: aws.String("t/a/nothing")},
	}}})
	mustNoErr(t, err)
	if len(del.Errors) != 1 || aws.ToString(del.Errors[0].Key) != "t/b/x" || aws.ToString(del.Errors[0].Code) != "AccessDenied" || len(del.Deleted) != 1 {
		t.Fatalf("DeleteObjects across grants: %+v", del)
	}

	// Read-only credential: reads pass, writes are denied.
	_, err = ro.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	mustNoErr(t, err)
	_, err = ro.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String("t/a/")})
	mustNoErr(t, err)
	_, err = ro.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/y"), Body: strings.NewReader("x")})
	denied("ro put", err, "allows read on s3://floe/t/a/", "needs write")
	_, err = ro.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	denied("ro delete", err)
	_, err = ro.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/mp")})
	denied("ro multipart", err)
	_, err = ro.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/y"), CopySource: aws.String(testBucket + "/t/a/x")})
	denied("ro copy", err)
	// Nothing was written or deleted.
	if _, err := admin.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"t/a/y", "t/b/y", "t/b/planted", "t/a/stolen"} {
		if _, err := admin.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k)}); err == nil {
			t.Fatalf("%s was written by a denied request", k)
		}
	}
}

func TestSecurity_Credentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	get := func(c *s3.Client) error {
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
		return err
	}
	put := func(c *s3.Client) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x"), Body: strings.NewReader("payload")})
		return err
	}
	for _, tc := range []struct {
		name           string
		ak, sec, tok   string
		code           string
		status         int
		op             func(*s3.Client) error
		wantNoTokenMsg bool
	}{
		{"wrong secret", akTableA, "not-the-secret", "tok-a", "SignatureDoesNotMatch", 403, get, false},
		{"wrong secret put", akTableA, "not-the-secret", "tok-a", "SignatureDoesNotMatch", 403, put, false},
		{"expired", akExpired, "x", "tok-x", "ExpiredToken", 400, get, false},
		{"invalid token", akInvalid, "x", "tok-x", "InvalidToken", 400, get, false},
		{"token mismatch", akTableA, "a-secret", "tok-other", "InvalidToken", 400, get, false},
		{"unknown key", "FLOEUNKNOWNKEYAAAA", "x", "tok", "InvalidAccessKeyId", 403, get, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op(e.clientWith(tc.ak, tc.sec, tc.tok))
			wantCode(t, err, tc.code, tc.status)
		})
	}

	// Unsigned requests are denied with a parseable XML error.
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req := must(http.NewRequest(m, e.srv.URL+"/"+testBucket+"/t/a/x", strings.NewReader("")))
		resp, body := e.rawDo(t, req)
		var xe struct {
			XMLName   xml.Name `xml:"Error"`
			Code      string
			Message   string
			Resource  string
			RequestID string `xml:"RequestId"`
		}
		if err := xml.Unmarshal(body, &xe); err != nil {
			t.Fatalf("%s unsigned: body %q: %v", m, body, err)
		}
		if resp.StatusCode != 403 || xe.Code != "AccessDenied" || xe.RequestID == "" || xe.RequestID != resp.Header.Get("x-amz-request-id") ||
			xe.Resource != "/"+testBucket+"/t/a/x" || resp.Header.Get("Content-Type") != "application/xml" {
			t.Fatalf("%s unsigned: %d %+v %v", m, resp.StatusCode, xe, resp.Header)
		}
		if !strings.Contains(xe.Message, "anonymous requests are refused") || !strings.Contains(xe.Message, "SELECT") {
			t.Errorf("%s unsigned: message %q does not explain how to get access", m, xe.Message)
		}
	}
	resp, body := e.rawDo(t, must(http.NewRequest(http.MethodHead, e.srv.URL+"/"+testBucket+"/t/a/x", nil)))
	if resp.StatusCode != 403 || len(body) != 0 || resp.Header.Get("x-amz-request-id") == "" {
		t.Fatalf("unsigned HEAD: %d %q", resp.StatusCode, body)
	}

	// A payload that does not match its signed hash is rejected and not stored.
	req := must(http.NewRequest(http.MethodPut, e.srv.URL+"/"+testBucket+"/t/a/tampered", strings.NewReader("original")))
	req.ContentLength = int64(len("original"))
	sum := "6b5cbe7cd8e9b8bb2ab8e5f4b5a2c9d0a1c8a4a8d8e5b1f0ab2a0c2f26a6cbd9" // not sha256("tampered!")
	c := e.res[akTableA]
	mustNoErr(t, sigv4.Sign(req, sigv4.Credentials{AccessKeyID: akTableA, SecretAccessKey: c.secret, SessionToken: c.token},
		"us-east-1", "s3", time.Now(), sum, sigv4.SignOptions{SignBody: true}))
	resp, body = e.rawDo(t, req)
	if resp.StatusCode != 400 || !bytes.Contains(body, []byte("XAmzContentSHA256Mismatch")) {
		t.Fatalf("tampered payload: %d %s", resp.StatusCode, body)
	}
	_, err := e.client(akTableA).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/tampered")})
	if err == nil {
		t.Fatal("a payload with a bad hash was stored")
	}

	// A request signed for another region.
	other := s3.New(s3.Options{Region: "eu-west-1", BaseEndpoint: aws.String(e.srv.URL), UsePathStyle: true,
		Credentials: e.client(akTableA).Options().Credentials, HTTPClient: e.srv.Client(), Retryer: aws.NopRetryer{}})
	_, err = other.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	wantCode(t, err, "AuthorizationHeaderMalformed", 400)
}

func TestSecurity_ClockSkew(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{skew: 20 * time.Minute})
	_, err := e.client(akTableA).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	wantCode(t, err, "RequestTimeTooSkewed", 403)
}

func TestAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	a := e.client(akTableA)
	e.takeEvents()
	_, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/audit"), Body: strings.NewReader("0123456789")})
	mustNoErr(t, err)
	get, err := a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/audit")})
	mustNoErr(t, err)
	readAll(t, get.Body)
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/nope")})
	wantCode(t, err, "AccessDenied", 403)
	_, err = a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String("t/a/")})
	mustNoErr(t, err)
	e.rawDo(t, must(http.NewRequest(http.MethodGet, e.srv.URL+"/"+testBucket+"/t/a/audit", nil)))
	_, err = e.clientWith(akTableA, "bad", "tok-a").GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/audit")})
	wantCode(t, err, "SignatureDoesNotMatch", 403)

	ev := e.takeEvents()
	type want struct {
		op, key, code string
		status        int
		sess          bool
	}
	wants := []want{
		{"PutObject", "t/a/audit", "", 200, true},
		{"GetObject", "t/a/audit", "", 200, true},
		{"GetObject", "t/b/nope", "AccessDenied", 403, true},
		{"ListObjectsV2", "t/a/", "", 200, true},
		{"GetObject", "t/a/audit", "AccessDenied", 403, false},
		{"GetObject", "t/a/audit", "SignatureDoesNotMatch", 403, false},
	}
	if len(ev) != len(wants) {
		t.Fatalf("got %d events, want %d: %+v", len(ev), len(wants), ev)
	}
	for i, w := range wants {
		g := ev[i]
		if g.Operation != w.op || g.Key != w.key || g.ErrorCode != w.code || g.Status != w.status || (g.Session != nil) != w.sess ||
			g.Bucket != testBucket || g.RequestID == "" || g.ClientAddr != "127.0.0.1" || g.Duration <= 0 || g.Time.IsZero() {
			t.Errorf("event %d = %+v, want %+v", i, g, w)
		}
		if w.sess && g.Session.AccessKeyID != akTableA {
			t.Errorf("event %d session = %+v", i, g.Session)
		}
	}
	if ev[0].BytesIn < 10 || ev[1].BytesOut != 10 || ev[2].BytesOut == 0 {
		t.Errorf("bytes: put in %d, get out %d, denied out %d", ev[0].BytesIn, ev[1].BytesOut, ev[2].BytesOut)
	}
}

// TestNoAuth serves anonymously (the insecure demo mode) and still decodes
// aws-chunked payloads.
func TestNoAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noAuth: true})
	chunked := "5;chunk-signature=aaaa\r\nhello\r\n6;chunk-signature=bbbb\r\n world\r\n0;chunk-signature=cccc\r\n\r\n"
	req := must(http.NewRequest(http.MethodPut, e.srv.URL+"/"+testBucket+"/any/key", strings.NewReader(chunked)))
	req.Header.Set("X-Amz-Content-Sha256", sigv4.StreamingPayload)
	req.Header.Set("X-Amz-Decoded-Content-Length", "11")
	req.Header.Set("Content-Encoding", "aws-chunked")
	resp, body := e.rawDo(t, req)
	if resp.StatusCode != 200 {
		t.Fatalf("anonymous chunked PUT: %d %s", resp.StatusCode, body)
	}
	resp, body = e.rawDo(t, must(http.NewRequest(http.MethodGet, e.srv.URL+"/"+testBucket+"/any/key", nil)))
	if resp.StatusCode != 200 || string(body) != "hello world" {
		t.Fatalf("anonymous GET: %d %q", resp.StatusCode, body)
	}
	// Signed clients work too (the signature is not checked).
	c := e.clientWith("anything", "whatever", "")
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("sdk/key"), Body: strings.NewReader("sdk")})
	mustNoErr(t, err)
	lb, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	mustNoErr(t, err)
	if len(lb.Buckets) != 2 {
		t.Fatalf("anonymous ListBuckets: %+v", lb.Buckets)
	}
}

func TestDeleteObjects_Limits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	send := func(body string, md5b64 string) (int, string) {
		req := must(http.NewRequest(http.MethodPost, e.srv.URL+"/"+testBucket+"/?delete", strings.NewReader(body)))
		req.ContentLength = int64(len(body))
		if md5b64 != "" {
			req.Header.Set("Content-MD5", md5b64)
		}
		c := e.res[akTableA]
		mustNoErr(t, sigv4.Sign(req, sigv4.Credentials{AccessKeyID: akTableA, SecretAccessKey: c.secret, SessionToken: c.token},
			"us-east-1", "s3", time.Now(), sigv4.UnsignedPayload, sigv4.SignOptions{SignBody: true}))
		resp, b := e.rawDo(t, req)
		return resp.StatusCode, string(b)
	}
	ok := "<Delete><Object><Key>t/a/x</Key></Object></Delete>"
	if st, body := send(ok, ""); st != 200 || !strings.Contains(body, "<Deleted><Key>t/a/x</Key></Deleted>") {
		t.Fatalf("DeleteObjects: %d %s", st, body)
	}
	if st, body := send(ok, "1B2M2Y8AsgTpgAmY7PhCfg=="); st != 400 || !strings.Contains(body, "<Code>BadDigest</Code>") {
		t.Fatalf("DeleteObjects with a wrong Content-MD5: %d %s", st, body)
	}
	big := "<Delete>" + strings.Repeat("<Object><Key>t/a/x</Key></Object>", 70000) + "</Delete>"
	if st, body := send(big, ""); st != 400 || !strings.Contains(body, "<Code>MalformedXML</Code>") {
		t.Fatalf("DeleteObjects over 2 MiB: %d %.200s", st, body)
	}
	many := "<Delete>" + strings.Repeat("<Object><Key>t/a/x</Key></Object>", 1001) + "</Delete>"
	if st, body := send(many, ""); st != 400 || !strings.Contains(body, "<Code>MalformedXML</Code>") {
		t.Fatalf("DeleteObjects with 1001 keys: %d %.200s", st, body)
	}
}

const noticeText = `principal "bi" may read table "ns.a" only through a data filter; query it through the SQL endpoint at 127.0.0.1:5433`

// TestNoticeCredential: a notice credential reads and writes nothing; a
// GET (or any other operation) is refused with the notice as the S3 error
// message, and a HEAD of a key under its table (whose error could carry no
// body) answers 200 with the length of the GET's error body and the notice in a header, without
// looking at the object, so that the client's next GET shows the notice.
func TestNoticeCredential(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	admin, n := e.client(akAdmin), e.client(akNotice)
	_, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x"), Body: strings.NewReader("secret data")})
	mustNoErr(t, err)
	noticed := func(name string, err error) {
		t.Helper()
		wantCode(t, err, "AccessDenied", 403)
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorMessage() != noticeText {
			t.Errorf("%s: error %v, want the notice as its message", name, err)
		}
	}
	_, err = n.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	noticed("get", err)
	_, err = n.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x"), Range: aws.String("bytes=0-0")})
	noticed("ranged get", err)
	_, err = n.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/y"), Body: strings.NewReader("x")})
	noticed("put", err)
	_, err = n.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket), Prefix: aws.String("t/a/")})
	noticed("list", err)
	_, err = n.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/x")})
	noticed("get elsewhere", err)

	// No existence or size oracle: the same answer for an object and for
	// none (keys of the same length), the length of the GET's error body.
	var sizes []int64
	for _, k := range []string{"t/a/x", "t/a/y"} {
		h, err := n.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k)})
		mustNoErr(t, err)
		if h.ETag != nil || h.LastModified != nil {
			t.Errorf("HEAD %s: etag %v, modified %v; want nothing about the object", k, h.ETag, h.LastModified)
		}
		sizes = append(sizes, aws.ToInt64(h.ContentLength))
	}
	get, err := http.NewRequest(http.MethodGet, e.srv.URL+"/"+testBucket+"/t/a/x", nil)
	mustNoErr(t, err)
	e.sign(get, akNotice)
	gr, err := e.srv.Client().Do(get)
	mustNoErr(t, err)
	body, err := io.ReadAll(gr.Body)
	gr.Body.Close()
	mustNoErr(t, err)
	if sizes[0] != sizes[1] || sizes[0] != int64(len(body)) || gr.StatusCode != 403 {
		t.Errorf("HEAD sizes %v, GET %d with a %d-byte body; want the body's length for both", sizes, gr.StatusCode, len(body))
	}
	_, err = n.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/b/x")})
	wantCode(t, err, "Forbidden", 403) // outside its table: refused as usual

	req, err := http.NewRequest(http.MethodHead, e.srv.URL+"/"+testBucket+"/t/a/x", nil)
	mustNoErr(t, err)
	e.sign(req, akNotice)
	resp, err := e.srv.Client().Do(req)
	mustNoErr(t, err)
	resp.Body.Close()
	if got := resp.Header.Get("X-Floe-Notice"); got != noticeText {
		t.Errorf("X-Floe-Notice = %q", got)
	}
}

// TestHeadErrorHeaders: a refused HEAD, which has no body, carries the S3
// error code and message in x-amz-error-code and x-amz-error-message.
func TestHeadErrorHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	req, err := http.NewRequest(http.MethodHead, e.srv.URL+"/"+testBucket+"/t/b/x", nil)
	mustNoErr(t, err)
	e.sign(req, akTableA)
	resp, err := e.srv.Client().Do(req)
	mustNoErr(t, err)
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("X-Amz-Error-Code") != "AccessDenied" ||
		!strings.Contains(resp.Header.Get("X-Amz-Error-Message"), "HeadObject on s3://floe/t/b/x needs read") {
		t.Errorf("HEAD: %d, headers %v", resp.StatusCode, resp.Header)
	}
}

// sign signs req with the credential ak of the test resolver.
func (e *env) sign(req *http.Request, ak string) {
	e.t.Helper()
	c := e.res[ak]
	if err := sigv4.Sign(req, sigv4.Credentials{AccessKeyID: ak, SecretAccessKey: c.secret, SessionToken: c.token},
		"us-east-1", "s3", time.Now(), sigv4.UnsignedPayload, sigv4.SignOptions{SignBody: true}); err != nil {
		e.t.Fatal(err)
	}
}
