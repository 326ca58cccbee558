package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/floe-lake/floe/console"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// browser is a client of a real Floe's console holding the session cookie.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar}}
}

func (b *browser) do(method, path, body string, hdr ...string) (int, []byte) {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Origin", b.base)
	req.Header.Set("Content-Type", "application/json")
	if b.csrf != "" {
		req.Header.Set(console.CSRFHeader, b.csrf)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (b *browser) login(id, secret string) {
	b.t.Helper()
	st, body := b.do("POST", "/console/api/login", `{"client_id":"`+id+`","client_secret":"`+secret+`"}`)
	if st != 200 {
		b.t.Fatalf("login %s: %d %s", id, st, body)
	}
	var info struct {
		CSRF string `json:"csrf_token"`
	}
	_ = json.Unmarshal(body, &info)
	b.csrf = info.CSRF
}

// TestConsoleActsWithTheCallersRights signs two principals in to the
// console of a real server: the admin may grant through it, a principal
// holding DESCRIBE only sees the table but can neither grant nor read data.
func TestConsoleActsWithTheCallersRights(t *testing.T) {
	f := testkit.Start(t)
	f.CreateTable(t, "crm", "opportunities")
	viewer := f.NewPrincipal(t, "viewer")
	if r := f.Do(t, "POST", "/api/v1/grants", map[string]any{"grantee": map[string]any{"kind": "principal", "name": "viewer"},
		"privilege": "DESCRIBE", "on": map[string]any{"kind": "table", "namespace": []string{"crm"}, "name": "opportunities"}}); r.Status != 201 {
		t.Fatalf("grant DESCRIBE: %d %s", r.Status, r.Body)
	}
	if r := f.Do(t, "POST", "/api/v1/grants", map[string]any{"grantee": map[string]any{"kind": "principal", "name": "viewer"},
		"privilege": "DESCRIBE", "on": map[string]any{"kind": "namespace", "namespace": []string{"crm"}}}); r.Status != 201 {
		t.Fatalf("grant DESCRIBE on crm: %d %s", r.Status, r.Body)
	}
	resp, err := http.Get(f.URL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != console.CSP {
		t.Fatalf("GET /console/: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}

	admin := newBrowser(t, f.URL)
	admin.login(f.Cred.ClientID, f.Cred.Secret)
	grant := `{"grantee":{"kind":"role","name":"analysts"},"privilege":"SELECT","on":{"kind":"table","namespace":["crm"],"name":"opportunities"}}`
	if st, body := admin.do("POST", "/console/api/proxy/api/v1/roles", `{"name":"analysts"}`); st != 201 {
		t.Fatalf("admin creates a role: %d %s", st, body)
	}
	if st, body := admin.do("POST", "/console/api/proxy/api/v1/grants", grant); st != 201 {
		t.Fatalf("admin grants through the console: %d %s", st, body)
	}

	v := newBrowser(t, f.URL)
	v.login(viewer.ClientID, viewer.Secret)
	st, body := v.do("GET", "/console/api/proxy/api/v1/whoami", "")
	if st != 200 || !strings.Contains(string(body), `"principal":"viewer"`) {
		t.Fatalf("viewer whoami: %d %s", st, body)
	}
	if st, body := v.do("GET", "/console/api/proxy/v1/"+f.Warehouse+"/namespaces/crm/tables/opportunities", ""); st != 200 {
		t.Fatalf("viewer loads the table's metadata: %d %s", st, body)
	}
	// Not even the admin's browser is handed storage keys.
	st, body = admin.do("GET", "/console/api/proxy/v1/"+f.Warehouse+"/namespaces/crm/tables/opportunities", "")
	if st != 200 || strings.Contains(string(body), "secret-access-key") || strings.Contains(string(body), "storage-credentials") {
		t.Fatalf("the console was given storage credentials: %d %s", st, body)
	}
	if st, body := v.do("POST", "/console/api/proxy/api/v1/grants",
		strings.Replace(grant, `"SELECT"`, `"DESCRIBE"`, 1)); st != 403 {
		t.Fatalf("viewer grants: %d %s, want 403", st, body)
	}
	if st, body := v.do("GET", "/console/api/proxy/api/v1/tables/"+f.Warehouse+"/crm/opportunities/timeline", ""); st != 200 ||
		!strings.Contains(string(body), `"snapshot_count":0`) {
		t.Fatalf("viewer reads the snapshot timeline (metadata): %d %s", st, body)
	}
	if st, body := v.do("GET", "/console/api/proxy/api/v1/tables/"+f.Warehouse+"/crm/opportunities/summary", ""); st != 403 {
		t.Fatalf("viewer reads file statistics: %d %s, want 403", st, body)
	}
	if st, body := v.do("GET", "/console/api/proxy/api/v1/audit", ""); st != 403 {
		t.Fatalf("viewer reads the audit log: %d %s, want 403", st, body)
	}
	// The admin sees the grant made through the console in the audit log,
	// and the chain verifies.
	st, body = admin.do("GET", "/console/api/proxy/api/v1/audit?action=mgmt.grant.create&limit=5", "")
	var page struct {
		Records []struct {
			Principal, Action, Outcome string
		} `json:"records"`
	}
	if err := json.Unmarshal(body, &page); st != 200 || err != nil || len(page.Records) < 2 ||
		page.Records[0].Principal != "viewer" || page.Records[0].Outcome != "denied" ||
		page.Records[1].Principal != "admin" || page.Records[1].Outcome != "success" {
		t.Fatalf("audit, newest first: want the viewer's denied grant, then the admin's: %d %s", st, body)
	}
	st, body = admin.do("GET", "/console/api/proxy/api/v1/audit/verify", "")
	if st != 200 || !strings.Contains(string(body), `"ok":true`) {
		t.Fatalf("audit verify: %d %s", st, body)
	}
}

// TestLogoutRevokesTheToken signs in through a console in front of a real
// server, takes the session's token, signs out, and finds the token
// refused at /v1/config.
func TestLogoutRevokesTheToken(t *testing.T) {
	f := testkit.Start(t)
	h := console.New(console.Options{Upstream: f.App.Handler(), Tokens: f.App.Auth()})
	srv := httptest.NewServer(h)
	defer srv.Close()
	b := newBrowser(t, srv.URL)
	b.login(f.Cred.ClientID, f.Cred.Secret)
	u, _ := http.NewRequest("GET", srv.URL+"/console/", nil)
	var cookie string
	for _, c := range b.c.Jar.Cookies(u.URL) {
		if c.Name == console.CookieName {
			cookie = c.Value
		}
	}
	tok, ok := console.SessionToken(h, cookie)
	if !ok {
		t.Fatal("no session after sign-in")
	}
	if r := f.DoAs(t, tok, "GET", "/v1/config", nil); r.Status != 200 {
		t.Fatalf("the session's token before logout: %d", r.Status)
	}
	if st, body := b.do("POST", "/console/api/logout", ""); st != 204 {
		t.Fatalf("logout: %d %s", st, body)
	}
	if r := f.DoAs(t, tok, "GET", "/v1/config", nil); r.Status != 401 {
		t.Fatalf("the session's token after logout: %d, want 401", r.Status)
	}
	// Wrong secrets go through the token endpoint's failure limit.
	for range 12 {
		st, _ := b.do("POST", "/console/api/login", `{"client_id":"test-admin","client_secret":"wrong"}`)
		if st == 429 {
			return
		}
		if st != 401 {
			t.Fatalf("wrong secret: %d, want 401 then 429", st)
		}
	}
	t.Fatal("12 wrong secrets were never limited (auth_failures_per_minute defaults to 10)")
}

func TestConsoleOff(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.Console = "off" })
	resp, err := http.Get(f.URL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("Content-Security-Policy") != "" {
		t.Fatalf("console off: GET /console/ = %d (CSP %q), want 404 from the catalog", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
}

// TestRevokeTokensEndsConsoleSessions: a console session holds a token of
// its principal, so revoking the principal's tokens (here by an
// administrator, outside the console) ends the session at its next call;
// a new sign-in works, and another principal's session is untouched.
func TestRevokeTokensEndsConsoleSessions(t *testing.T) {
	f := testkit.Start(t)
	ops := f.NewPrincipal(t, "ops")
	b := newBrowser(t, f.URL)
	b.login(ops.ClientID, ops.Secret)
	admin := newBrowser(t, f.URL)
	admin.login(f.Cred.ClientID, f.Cred.Secret)
	for _, br := range []*browser{b, admin} {
		if st, body := br.do("GET", "/console/api/proxy/api/v1/whoami", ""); st != 200 {
			t.Fatalf("whoami before the revocation: %d %s", st, body)
		}
	}
	if r := f.Do(t, "POST", "/api/v1/principals/ops/revoke-tokens", nil); r.Status != 200 {
		t.Fatalf("revoke-tokens: %d %s", r.Status, r.Body)
	}
	if st, body := b.do("GET", "/console/api/proxy/api/v1/whoami", ""); st != 401 {
		t.Fatalf("ops's console session after revoke-tokens: %d %s, want 401", st, body)
	}
	if st, body := admin.do("GET", "/console/api/proxy/api/v1/whoami", ""); st != 200 {
		t.Fatalf("the admin's console session after ops's revocation: %d %s", st, body)
	}
	again := newBrowser(t, f.URL)
	again.login(ops.ClientID, ops.Secret)
	if st, body := again.do("GET", "/console/api/proxy/api/v1/whoami", ""); st != 200 || !strings.Contains(string(body), `"principal":"ops"`) {
		t.Fatalf("ops signs in again: %d %s", st, body)
	}
}
