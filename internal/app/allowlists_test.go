package app_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// network returns a testkit option that sets the allowlists.
func network(f func(*app.Allowlists)) testkit.Option {
	return func(c *app.Config) { f(&c.Network) }
}

// get sends a GET with optional headers (name, value, ...) and returns the
// status and body.
func get(t *testing.T, u string, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// errorModel decodes an Iceberg ErrorModel response.
func errorModel(t *testing.T, b []byte) (msg, typ string, code int) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("not an ErrorModel: %v: %s", err, b)
	}
	return e.Error.Message, e.Error.Type, e.Error.Code
}

// waitAudit waits up to 5 s for an audit record matching ok.
func waitAudit(t *testing.T, f *testkit.Floe, ok func(audit.Record) bool) audit.Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rs, err := f.App.Store().AuditRecords(context.Background(), 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if ok(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no matching audit record")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func deniedEvent(listener, addr string) func(audit.Record) bool {
	return func(r audit.Record) bool {
		return r.Action == "net.denied" && r.ClientAddr == addr && r.Outcome == audit.OutcomeDenied &&
			strings.Contains(string(r.Detail), `"listener":"`+listener+`"`)
	}
}

// TestRESTListenerAllowlist: a request to the REST catalog listener (the
// catalog, the token endpoint, the management API) from outside
// rest_allow_cidrs is refused with 403 and an ErrorModel naming the
// address and the listener, and audited as net.denied; X-Forwarded-For is
// believed only from a trusted proxy.
func TestRESTListenerAllowlist(t *testing.T) {
	t.Run("localhost outside", func(t *testing.T) {
		f := testkit.Start(t, network(func(n *app.Allowlists) { n.RESTAllowCIDRs = []string{"10.0.0.0/8"} }))
		for _, path := range []string{"/v1/config", "/v1/oauth/tokens", "/api/v1/principals", "/.well-known/oauth-authorization-server"} {
			// An X-Forwarded-For from an untrusted peer changes nothing.
			status, body := get(t, f.URL+path, "X-Forwarded-For", "10.1.2.3")
			if status != 403 {
				t.Fatalf("GET %s: status %d, want 403: %s", path, status, body)
			}
			msg, typ, code := errorModel(t, body)
			if msg != "client address 127.0.0.1 is not in the rest listener's allowlist" || typ != "ForbiddenException" || code != 403 {
				t.Fatalf("GET %s: %q %q %d", path, msg, typ, code)
			}
		}
		waitAudit(t, f, deniedEvent("rest", "127.0.0.1"))
		// Refusals never reach the request metrics; they have their own.
		if got := deniedMetric(t, f, "rest"); got != 4 {
			t.Fatalf("floe_network_denied_total{listener=\"rest\"} = %v, want 4", got)
		}
	})
	t.Run("behind a trusted proxy", func(t *testing.T) {
		f := testkit.Start(t, network(func(n *app.Allowlists) {
			n.RESTAllowCIDRs, n.TrustedProxies = []string{"10.0.0.0/8"}, []string{"127.0.0.1"}
		}))
		if status, body := get(t, f.URL+"/v1/config", "X-Forwarded-For", "10.1.2.3"); status != 401 {
			t.Fatalf("inside: status %d, want 401 (past the allowlist, no token): %s", status, body)
		}
		status, body := get(t, f.URL+"/v1/config", "X-Forwarded-For", "10.1.2.3, 192.0.2.44")
		if status != 403 {
			t.Fatalf("outside: status %d: %s", status, body)
		}
		if msg, _, _ := errorModel(t, body); msg != "client address 192.0.2.44 is not in the rest listener's allowlist" {
			t.Fatalf("outside: %q", msg)
		}
		waitAudit(t, f, deniedEvent("rest", "192.0.2.44"))
	})
}

// deniedMetric reads floe_network_denied_total for a listener.
func deniedMetric(t *testing.T, f *testkit.Floe, listener string) float64 {
	t.Helper()
	fams, err := f.App.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() != "floe_network_denied_total" {
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "listener" && l.GetValue() == listener {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestS3ListenerAllowlist: a request to the S3 endpoint from outside
// s3_allow_cidrs is refused with an S3 XML AccessDenied naming the
// address, before its signature is looked at, and audited.
func TestS3ListenerAllowlist(t *testing.T) {
	f := testkit.Start(t, network(func(n *app.Allowlists) { n.S3AllowCIDRs = []string{"10.0.0.0/8"} }))
	status, body := get(t, f.App.S3URL()+"/floe/some/key")
	if status != 403 {
		t.Fatalf("status %d: %s", status, body)
	}
	var e struct {
		Code, Message string
	}
	if err := xml.Unmarshal(body, &e); err != nil {
		t.Fatalf("not S3 XML: %v: %s", err, body)
	}
	if e.Code != "AccessDenied" || e.Message != "client address 127.0.0.1 is not in the s3 listener's allowlist" {
		t.Fatalf("%+v", e)
	}
	waitAudit(t, f, deniedEvent("s3", "127.0.0.1"))
	// The REST listener has no allowlist here.
	if status, _ := get(t, f.URL+"/v1/config"); status != 401 {
		t.Fatalf("REST: status %d", status)
	}
}

// TestSQLListenerAllowlist: a connection to the SQL endpoint from outside
// sql_allow_cidrs gets ErrorResponse 28000 before any password is asked
// for, and is audited; one inside logs in.
func TestSQLListenerAllowlist(t *testing.T) {
	ctx := context.Background()
	connect := func(f *testkit.Floe) (*pgx.Conn, error) {
		u := url.URL{Scheme: "postgres", User: url.UserPassword("admin", f.Token(t)), Host: f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
		return pgx.Connect(ctx, u.String())
	}
	t.Run("outside", func(t *testing.T) {
		f := testkit.Start(t, network(func(n *app.Allowlists) { n.SQLAllowCIDRs = []string{"10.0.0.0/8", "fd00::/8"} }))
		c, err := connect(f)
		if err == nil {
			c.Close(ctx)
			t.Fatal("login accepted from outside the allowlist")
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28000" || pe.Message != "client address 127.0.0.1 is not in the sql listener's allowlist" {
			t.Fatalf("err %v, want SQLSTATE 28000 naming the rule", err)
		}
		waitAudit(t, f, deniedEvent("sql", "127.0.0.1"))
	})
	t.Run("inside", func(t *testing.T) {
		f := testkit.Start(t, network(func(n *app.Allowlists) { n.SQLAllowCIDRs = []string{"127.0.0.0/8", "::1"} }))
		c, err := connect(f)
		if err != nil {
			t.Fatalf("login from inside: %v", err)
		}
		defer c.Close(ctx)
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// do sends method path with a JSON body as tok from the client address
// xff (through the trusted proxy 127.0.0.1) and returns status and body.
func do(t *testing.T, f *testkit.Floe, tok, method, path, xff string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, f.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// tokenFrom runs the client-credentials grant from the client address xff.
func tokenFrom(t *testing.T, f *testkit.Floe, c app.Credential, xff string) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.ClientID}, "client_secret": {c.Secret}, "scope": {"catalog"}}
	req, err := http.NewRequest("POST", f.URL+"/v1/oauth/tokens", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", xff)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// s3Get reads key from the embedded S3 endpoint with a URL presigned with
// the vended credentials in cfg, from the client address xff.
func s3Get(t *testing.T, f *testkit.Floe, cfg map[string]string, key, xff string) (int, []byte) {
	t.Helper()
	u := presign(t, f, testkit.Table{Config: cfg}, "GET", key)
	req, err := http.NewRequest("GET", u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", xff) // added by the proxy
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestPrincipalAllowlist: a principal's allowed_cidrs (set through the
// management API) refuses, from a client address outside it, token
// issuance (OAuth access_denied), its bearer token on the REST catalog
// (403 ErrorModel), the storage credentials vended to it on the S3
// endpoint (403 AccessDenied: the list travels with the credential) and
// its SQL logins by token and by password (28000); from inside it all
// works. A changed list applies to existing tokens at their next request.
func TestPrincipalAllowlist(t *testing.T) {
	f := testkit.Start(t, network(func(n *app.Allowlists) { n.TrustedProxies = []string{"127.0.0.1"} }))
	ctx := context.Background()
	admin := f.Token(t)
	tbl := f.CreateTable(t, "crm", "accounts")
	const inside, outside = "10.1.2.3", "192.0.2.9"

	status, body := do(t, f, admin, "POST", "/api/v1/principals", "", map[string]any{"name": "etl", "allowed_cidrs": []string{"10.0.0.0/8", "2001:db8::/32"}})
	if status != 201 {
		t.Fatalf("create principal: %d %s", status, body)
	}
	var np struct {
		ClientID     string   `json:"client_id"`
		ClientSecret string   `json:"client_secret"`
		AllowedCIDRs []string `json:"allowed_cidrs"`
	}
	if err := json.Unmarshal(body, &np); err != nil || strings.Join(np.AllowedCIDRs, ",") != "10.0.0.0/8,2001:db8::/32" {
		t.Fatalf("create principal: %v %s", err, body)
	}
	etl := app.Credential{ClientID: np.ClientID, Secret: np.ClientSecret}
	for _, priv := range []string{"DESCRIBE", "SELECT"} {
		g := map[string]any{"grantee": map[string]any{"kind": "principal", "name": "etl"}, "privilege": priv,
			"on": map[string]any{"kind": "table", "namespace": []string{"crm"}, "name": "accounts"}}
		if status, body := do(t, f, admin, "POST", "/api/v1/grants", "", g); status != 201 {
			t.Fatalf("grant %s: %d %s", priv, status, body)
		}
	}

	// Token issuance.
	status, out := tokenFrom(t, f, etl, outside)
	if status != 403 || out["error"] != "access_denied" || out["error_description"] != "client address 192.0.2.9 is not in principal etl's allowlist" {
		t.Errorf("token from outside: %d %v", status, out)
	}
	status, out = tokenFrom(t, f, etl, inside)
	if status != 200 {
		t.Fatalf("token from inside: %d %v", status, out)
	}
	tok, _ := out["access_token"].(string)

	// Its bearer token on the REST catalog.
	load := f.P("/namespaces/crm/tables/accounts")
	status, body = do(t, f, tok, "GET", load, inside, nil)
	if status != 200 {
		t.Fatalf("loadTable from inside: %d %s", status, body)
	}
	var loaded testkit.Table
	if err := json.Unmarshal(body, &loaded); err != nil {
		t.Fatal(err)
	}
	status, body = do(t, f, tok, "GET", load, outside, nil)
	if status != 403 {
		t.Errorf("loadTable from outside: %d %.80s", status, body)
	} else if msg, typ, _ := errorModel(t, body); msg != "client address 192.0.2.9 is not in principal etl's allowlist" || typ != "ForbiddenException" {
		t.Errorf("loadTable from outside: %q %q", msg, typ)
	}
	// ... and on the management API.
	if status, body := do(t, f, tok, "GET", "/api/v1/whoami", outside, nil); status != 403 {
		t.Errorf("whoami from outside: %d %s", status, body)
	}

	// Its vended storage credentials on the S3 endpoint.
	key := strings.TrimPrefix(tbl.MetadataLocation, "s3://")
	if status, body := s3Get(t, f, loaded.Config, key, inside); status != 200 {
		t.Fatalf("S3 GET from inside: %d %s", status, body)
	}
	status, body = s3Get(t, f, loaded.Config, key, outside)
	var s3e struct{ Code, Message string }
	if status != 403 || xml.Unmarshal(body, &s3e) != nil || s3e.Code != "AccessDenied" ||
		s3e.Message != "client address 192.0.2.9 is not in principal etl's allowlist" {
		t.Errorf("S3 GET from outside: %d %.80s", status, body)
	}

	// SQL logins come from 127.0.0.1, outside the list: by token ...
	sqlConnect := func(user, password string) (*pgx.Conn, error) {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
		return pgx.Connect(ctx, u.String())
	}
	refused := func(what string, c *pgx.Conn, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if err == nil {
			c.Close(ctx)
			t.Errorf("%s: login accepted from outside the allowlist", what)
			return
		}
		if !errors.As(err, &pe) || pe.Code != "28000" || pe.Message != "client address 127.0.0.1 is not in principal etl's allowlist" {
			t.Errorf("%s: %v, want SQLSTATE 28000 naming the rule", what, err)
		}
	}
	c, err := sqlConnect("etl", tok)
	refused("token login", c, err)
	// ... and by SCRAM password.
	v, err := pgwire.NewScramVerifier("pw-of-etl")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.App.Auth().SetSQLPassword(ctx, "etl", v.String()); err != nil {
		t.Fatal(err)
	}
	c, err = sqlConnect("etl", "pw-of-etl")
	refused("password login", c, err)
	// With loopback on the list, the password logs in.
	if status, body := do(t, f, admin, "PUT", "/api/v1/principals/etl/allowed-cidrs", "", map[string]any{"allowed_cidrs": []string{"127.0.0.0/8", "::1", "10.0.0.0/8"}}); status != 200 {
		t.Fatalf("set allowed cidrs: %d %s", status, body)
	}
	c, err = sqlConnect("etl", "pw-of-etl")
	if err != nil {
		t.Fatalf("password login from inside: %v", err)
	}
	c.Close(ctx)

	// A changed list applies to the existing token at its next request.
	if status, body := do(t, f, admin, "PUT", "/api/v1/principals/etl/allowed-cidrs", "", map[string]any{"allowed_cidrs": []string{"192.168.0.0/16"}}); status != 200 {
		t.Fatalf("set allowed cidrs: %d %s", status, body)
	}
	if status, body := do(t, f, tok, "GET", load, inside, nil); status != 403 {
		t.Errorf("loadTable after the list changed: %d %.80s", status, body)
	}
	// Bad lists are refused whole.
	for _, bad := range [][]string{{"10.0.0.0/33"}, {"example.com"}} {
		if status, body := do(t, f, admin, "PUT", "/api/v1/principals/etl/allowed-cidrs", "", map[string]any{"allowed_cidrs": bad}); status != 400 {
			t.Fatalf("bad list %v: %d %s", bad, status, body)
		}
	}
	if status, _ := do(t, f, admin, "POST", "/api/v1/principals", "", map[string]any{"name": "bad", "allowed_cidrs": []string{"nope"}}); status != 400 {
		t.Fatalf("create with a bad list: %d", status)
	}
	if status, _ := do(t, f, admin, "GET", "/api/v1/principals/bad", "", nil); status != 404 {
		t.Fatalf("a principal with a bad list was created: %d", status)
	}
}

// TestListenerDeniedAuditBounded: a flood from outside an allowlist is
// refused in full but recorded at most 20 times per listener and second, so
// outsiders cannot make the server write to its store without limit.
func TestListenerDeniedAuditBounded(t *testing.T) {
	f := testkit.Start(t, network(func(n *app.Allowlists) { n.RESTAllowCIDRs = []string{"10.0.0.0/8"} }))
	start := time.Now()
	const flood = 200
	for range flood {
		if status, body := get(t, f.URL+"/v1/config"); status != 403 {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	seconds := int(time.Since(start)/time.Second) + 2 // the windows the flood touched
	waitAudit(t, f, deniedEvent("rest", "127.0.0.1"))
	time.Sleep(300 * time.Millisecond) // the background writer's batches
	rs, err := f.App.Store().AuditRecords(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.Action == "net.denied" {
			n++
		}
	}
	if n == 0 || n > 20*seconds || n >= flood {
		t.Fatalf("%d net.denied records for %d refusals over at most %d s, want 1..%d", n, flood, seconds, 20*seconds)
	}
}
