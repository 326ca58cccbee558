package multinode

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestNodes_RevocationReachesOtherNodes: a credential vended by node A and
// used on node B's S3 endpoint (signed and presigned) is refused by node B
// within one second of a revocation made on node A: token revoked, grant
// revoked, principal disabled, all the principal's tokens revoked.
func TestNodes_RevocationReachesOtherNodes(t *testing.T) {
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	ctx := context.Background()
	lt := a.CreateTable(t, "rv", "t")
	key := strings.TrimPrefix(lt.MetadataLocation, "s3://floe/")
	cases := []struct {
		name   string
		revoke func(t *testing.T, principal, clientID, secret, token, grantID string)
		reason string
	}{
		{"token revoked", func(t *testing.T, _, clientID, secret, token, _ string) {
			form := url.Values{"token": {token}, "client_id": {clientID}, "client_secret": {secret}}
			resp, err := http.PostForm(a.URL+"/v1/oauth/revoke", form)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("revoke on node A: %d", resp.StatusCode)
			}
		}, "credential revoked: token revoked"},
		{"grant revoked", func(t *testing.T, _, _, _, _, grantID string) {
			if err := a.App.Authz().RevokeID(ctx, grantID); err != nil {
				t.Fatal(err)
			}
		}, "credential revoked: grant revoked"},
		{"principal disabled", func(t *testing.T, principal, _, _, _, _ string) {
			if r := a.Do(t, "POST", "/api/v1/principals/"+principal+"/disable", nil); r.Status != 200 {
				t.Fatalf("disable on node A: %d %s", r.Status, r.Body)
			}
		}, "credential revoked: principal disabled"},
		{"principal's tokens revoked", func(t *testing.T, principal, _, _, _, _ string) {
			if r := a.Do(t, "POST", "/api/v1/principals/"+principal+"/revoke-tokens", nil); r.Status != 200 {
				t.Fatalf("revoke-tokens on node A: %d %s", r.Status, r.Body)
			}
		}, "credential revoked: the principal's tokens were revoked"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "etl" + string(rune('a'+i))
			cred := a.NewPrincipal(t, name)
			g, err := a.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal(name), Privilege: authz.Select,
				On: authz.Table(a.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"rv"}, Name: "t"})})
			if err != nil {
				t.Fatal(err)
			}
			tok := a.TokenFor(t, cred.ClientID, cred.Secret)
			var loaded testkit.Table
			r := a.DoAs(t, tok, "GET", a.P("/namespaces/rv/tables/t"), nil)
			if r.Status != 200 {
				t.Fatalf("load as %s: %d %s", name, r.Status, r.Body)
			}
			r.JSON(t, &loaded)
			c := loaded.Config
			client := s3.New(s3.Options{BaseEndpoint: aws.String(b.App.S3URL()), Region: c["client.region"], UsePathStyle: true,
				Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
			in := &s3.GetObjectInput{Bucket: aws.String("floe"), Key: aws.String(key)}
			get := func() error {
				out, err := client.GetObject(ctx, in)
				if err == nil {
					out.Body.Close()
				}
				return err
			}
			if err := get(); err != nil {
				t.Fatalf("node B refused node A's credential before any revocation: %v", err)
			}
			ps, err := s3.NewPresignClient(client).PresignGetObject(ctx, in)
			if err != nil {
				t.Fatal(err)
			}

			tc.revoke(t, name, cred.ClientID, cred.Secret, tok, g.ID)
			start := time.Now()
			for err = get(); err == nil && time.Since(start) < 3*time.Second; err = get() {
				time.Sleep(10 * time.Millisecond)
			}
			took := time.Since(start)
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" || !strings.Contains(ae.ErrorMessage(), tc.reason) {
				t.Fatalf("node B after the revocation on node A: %v", err)
			}
			if took > time.Second {
				t.Fatalf("node B honoured the revoked credential for %s", took)
			}
			resp, err := http.Get(ps.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 403 {
				t.Fatalf("presigned GET on node B after the revocation: %d", resp.StatusCode)
			}
			t.Logf("refused by node B %s after the revocation on node A", took.Round(time.Millisecond))
		})
	}
}
