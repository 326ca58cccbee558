package federation_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestEndToEndRemoteSigningPassthrough: a caller who asks the local Floe
// for remote signing of a foreign table gets Floe's own signer for it (and
// its own token for it), never the remote's signer or Floe's identity at
// the remote; Floe's signer checks the caller's grants, then the remote's
// signer signs with Floe's identity, and the signed request reads the
// remote's object. Writes are not signed while the catalog is read-only;
// a principal with DESCRIBE only gets nothing signed.
func TestEndToEndRemoteSigningPassthrough(t *testing.T) {
	ctx := context.Background()
	remote, local, _ := remoteFloe(t)
	tok := local.Token(t)
	path := "/v1/acme/namespaces/crm/tables/accounts"
	r := local.DoAs(t, tok, "GET", path, nil, "X-Iceberg-Access-Delegation", "remote-signing")
	if r.Status != 200 {
		t.Fatalf("load: %d %s", r.Status, r.Body)
	}
	var lt struct {
		MetadataLocation string            `json:"metadata-location"`
		Config           map[string]string `json:"config"`
		Creds            []any             `json:"storage-credentials"`
	}
	r.JSON(t, &lt)
	cfg := lt.Config
	if cfg["s3.remote-signing-enabled"] != "true" || strings.TrimRight(cfg["s3.signer.uri"], "/") != local.URL ||
		cfg["s3.signer.endpoint"] != strings.TrimPrefix(path, "/")+"/sign" || cfg["token"] != tok {
		t.Fatalf("signer config: %v", cfg)
	}
	if cfg["s3.access-key-id"] != "" || len(lt.Creds) > 0 || strings.Contains(string(r.Body), remote.Cred.Secret) {
		t.Fatalf("a signing answer carries keys: %s", r.Body)
	}
	// The object to read: the table's metadata file on the remote's S3
	// endpoint.
	s3ep := strings.TrimRight(cfg["s3.endpoint"], "/")
	loc := strings.TrimPrefix(lt.MetadataLocation, "s3://")
	if s3ep == "" || loc == lt.MetadataLocation {
		t.Fatalf("endpoint %q, metadata %q", s3ep, lt.MetadataLocation)
	}
	objURL := s3ep + "/" + loc
	sign := func(tok, method, uri string) (int, map[string][]string, string) {
		t.Helper()
		r := local.DoAs(t, tok, "POST", path+"/sign", map[string]any{"region": "us-east-1", "method": method, "uri": uri, "headers": map[string][]string{}})
		var out struct {
			URI     string              `json:"uri"`
			Headers map[string][]string `json:"headers"`
		}
		if r.Status == 200 {
			r.JSON(t, &out)
		}
		return r.Status, out.Headers, string(r.Body)
	}
	status, headers, body := sign(tok, "GET", objURL)
	if status != 200 || len(headers["Authorization"]) == 0 {
		t.Fatalf("sign GET: %d %s", status, body)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", objURL, nil)
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !json.Valid(got) || !strings.Contains(string(got), `"format-version"`) {
		t.Fatalf("signed GET of the remote's object: %d %.200s", resp.StatusCode, got)
	}
	// Writes: not while the catalog is read-only.
	if status, _, body := sign(tok, "PUT", s3ep+"/"+strings.TrimSuffix(loc, ".metadata.json")+"-x.parquet"); status != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Fatalf("sign PUT: %d %s", status, body)
	}
	// A request outside the table: the remote's signer refuses it.
	u, _ := url.Parse(objURL)
	outside := s3ep + "/" + strings.SplitN(strings.TrimPrefix(u.Path, "/"), "/", 2)[0] + "/elsewhere/x.parquet"
	if status, _, body := sign(tok, "GET", outside); status != http.StatusForbidden && status != http.StatusBadRequest {
		t.Fatalf("sign outside the table: %d %s", status, body)
	}
	// DESCRIBE only: no signing, no signer in the config.
	acmeAcc := authz.Table("acme", catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "accounts"})
	if _, err := local.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal("carol"), Privilege: authz.Describe, On: acmeAcc}); err != nil {
		t.Fatal(err)
	}
	carol := local.PrincipalToken(t, "carol")
	if status, _, body := sign(carol, "GET", objURL); status != http.StatusForbidden || !strings.Contains(body, "SELECT") {
		t.Fatalf("carol signs: %d %s", status, body)
	}
	if r := local.DoAs(t, carol, "GET", path, nil, "X-Iceberg-Access-Delegation", "remote-signing"); r.Status != 200 ||
		strings.Contains(string(r.Body), "s3.signer") || strings.Contains(string(r.Body), "remote-signing-enabled") {
		t.Fatalf("carol's load: %d %s", r.Status, r.Body)
	}
	// Audit: the sign calls went to the remote under Floe's identity,
	// audited with the local admin.
	waitAudit(t, local, func(action, principal, detail string) bool {
		return action == "federation.remote.signRequest" && principal == "admin" && strings.Contains(detail, `"status":200`)
	})
}

// TestPassthroughCredentialsAudited: every storage credential a foreign
// table's load hands to a caller is a federation.credentials.passthrough
// event naming the catalog, the identity, its access key id and the
// caller's token id, and never its secret.
func TestPassthroughCredentialsAudited(t *testing.T) {
	_, local, _ := remoteFloe(t)
	r := local.Do(t, "GET", "/v1/acme/namespaces/crm/tables/accounts", nil)
	var lt struct {
		Config map[string]string `json:"config"`
		Creds  []struct {
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	r.JSON(t, &lt)
	ak, secret := lt.Config["s3.access-key-id"], lt.Config["s3.secret-access-key"]
	if len(lt.Creds) > 0 {
		ak, secret = lt.Creds[0].Config["s3.access-key-id"], lt.Creds[0].Config["s3.secret-access-key"]
	}
	if ak == "" || secret == "" {
		t.Fatalf("no credentials passed through: %s", r.Body)
	}
	waitAudit(t, local, func(action, principal, detail string) bool {
		if strings.Contains(detail, secret) {
			t.Fatalf("a secret in an audit record: %s", detail)
		}
		return action == "federation.credentials.passthrough" && principal == "admin" && strings.Contains(detail, ak) &&
			strings.Contains(detail, `"identity":"read"`) && strings.Contains(detail, `"token_id":"`) && strings.Contains(detail, `"catalog":"acme"`)
	})
}

// waitAudit waits until an audit record of f satisfies match.
func waitAudit(t *testing.T, f *testkit.Floe, match func(action, principal, detail string) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, err := f.App.Store().AuditRecords(context.Background(), 0, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if match(rec.Action, rec.Principal, string(rec.Detail)) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no matching audit record")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
