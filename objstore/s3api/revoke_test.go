package s3api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/vend"
)

// TestRevokedCredential: a credential Options.Revoked refuses gets
// AccessDenied with the reason, on signed and presigned requests, and the
// refusal is audited with the credential's session (its id and token id).
func TestRevokedCredential(t *testing.T) {
	t.Parallel()
	var revoked atomic.Bool
	errRevoked := floe.E(floe.Forbidden, "credential", "credential revoked: token revoked")
	e := newEnv(t, envOptions{revoked: func(s *vend.Session) error {
		if revoked.Load() && s.AccessKeyID == akTableA {
			return errRevoked
		}
		return nil
	}})
	ctx := context.Background()
	a := e.client(akTableA)
	_, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x"), Body: strings.NewReader("x")})
	mustNoErr(t, err)
	ps, err := s3.NewPresignClient(a).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")},
		func(o *s3.PresignOptions) { o.Expires = 15 * time.Minute })
	mustNoErr(t, err)
	get := func() (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, ps.URL, nil)
		mustNoErr(t, err)
		return e.rawDo(t, req)
	}
	if resp, _ := get(); resp.StatusCode != 200 {
		t.Fatalf("presigned GET before revocation: %d", resp.StatusCode)
	}
	e.takeEvents()

	revoked.Store(true)
	_, err = a.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	wantCode(t, err, "AccessDenied", 403)
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorMessage() != "credential revoked: token revoked" {
		t.Fatalf("GetObject: %v", err)
	}
	resp, body := get()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "<Code>AccessDenied</Code>") ||
		!strings.Contains(string(body), "credential revoked: token revoked") {
		t.Fatalf("presigned GET after revocation: %d %s", resp.StatusCode, body)
	}
	evs := e.takeEvents()
	if len(evs) != 2 {
		t.Fatalf("%d access events, want 2", len(evs))
	}
	for _, ev := range evs {
		if ev.Session == nil || ev.Session.ID != "id-"+akTableA || ev.Revoked != "credential revoked: token revoked" || ev.Status != 403 {
			t.Errorf("access event %+v does not name the revoked credential", ev)
		}
	}
	// Other credentials are untouched.
	_, err = e.client(akReadOnly).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	mustNoErr(t, err)
	// A forged signature is not told the credential is revoked.
	bad := e.clientWith(akTableA, "wrong-secret", e.res[akTableA].token)
	_, err = bad.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("t/a/x")})
	if errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), "revoked") {
		t.Fatalf("a request with a bad signature learned of the revocation: %v", err)
	}
}
