package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// loginStatus posts a sign-in body and returns the status, the body and
// the Retry-After header.
func (b *browser) loginStatus(body string) (int, string, string) {
	b.t.Helper()
	req, err := http.NewRequest("POST", b.base+"/console/api/login", strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Origin", b.base)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), resp.Header.Get("Retry-After")
}

// sqlLogin logs in to the SQL endpoint of f by password.
func sqlLogin(f *testkit.Floe, user, password string) error {
	host, port, _ := net.SplitHostPort(f.SQLAddr)
	cfg, err := pgx.ParseConfig("host=" + host + " port=" + port + " dbname=floe sslmode=disable")
	if err != nil {
		return err
	}
	cfg.User, cfg.Password = user, password
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

func setSQLPassword(t *testing.T, f *testkit.Floe, name, password string) {
	t.Helper()
	v, err := pgwire.NewScramVerifier(password)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.App.Auth().SetSQLPassword(context.Background(), name, v.String()); err != nil {
		t.Fatal(err)
	}
}

// TestPasswordSignIn signs in to a real server's console with a SQL
// password: the session acts as that principal; a wrong password, an
// unknown user and a principal without a SQL password get the same answer;
// wrong passwords count against the SQL endpoint's login limiter (per user
// and address), which then answers 429 with Retry-After, also to the right
// password, and also at the SQL endpoint itself; every attempt is audited
// as console.login with its method, and no password reaches the audit log.
func TestPasswordSignIn(t *testing.T) {
	f := testkit.Start(t)
	f.NewPrincipal(t, "viewer")
	f.NewPrincipal(t, "nopass")
	setSQLPassword(t, f, "viewer", "correct horse battery")

	b := newBrowser(t, f.URL)
	st, body, _ := b.loginStatus(`{"user":"viewer","password":"correct horse battery"}`)
	if st != 200 || !strings.Contains(body, `"principal":"viewer"`) {
		t.Fatalf("password sign-in: %d %s", st, body)
	}
	var info struct {
		CSRF string `json:"csrf_token"`
	}
	_ = json.Unmarshal([]byte(body), &info)
	b.csrf = info.CSRF
	if st, body := b.do("GET", "/console/api/proxy/api/v1/whoami", ""); st != 200 || !strings.Contains(string(body), `"principal":"viewer"`) {
		t.Fatalf("whoami through the password session: %d %s", st, body)
	}

	// The same refusal for a wrong password, an unknown user and a user
	// without a SQL password (each from its own key of the limiter).
	var refusals []string
	for _, c := range []string{
		`{"user":"viewer","password":"wrong"}`,
		`{"user":"nobody","password":"correct horse battery"}`,
		`{"user":"nopass","password":"correct horse battery"}`,
	} {
		st, body, _ := newBrowser(t, f.URL).loginStatus(c)
		if st != 401 {
			t.Fatalf("%s: %d %s, want 401", c, st, body)
		}
		refusals = append(refusals, body)
	}
	if refusals[0] != refusals[1] || refusals[1] != refusals[2] {
		t.Fatalf("refusals differ (they tell which users exist):\n%s\n%s\n%s", refusals[0], refusals[1], refusals[2])
	}
	// Bad requests: both methods at once, a missing password.
	for _, c := range []string{`{"user":"viewer","password":"x","client_id":"a","client_secret":"b"}`, `{"user":"viewer"}`} {
		if st, body, _ := newBrowser(t, f.URL).loginStatus(c); st != 400 {
			t.Fatalf("%s: %d %s, want 400", c, st, body)
		}
	}

	// The limiter: sql_login_failures_per_minute (10) per user and
	// address, one wrong attempt is already spent above.
	limited := false
	for i := range 12 {
		st, body, ra := newBrowser(t, f.URL).loginStatus(`{"user":"viewer","password":"wrong"}`)
		if st == 429 {
			if ra == "" || ra == "0" {
				t.Fatalf("429 without Retry-After: %s", body)
			}
			if i < 9 {
				t.Fatalf("limited after %d wrong passwords, want 10", i+1)
			}
			limited = true
			break
		}
		if st != 401 {
			t.Fatalf("wrong password %d: %d %s", i, st, body)
		}
	}
	if !limited {
		t.Fatal("wrong passwords were never limited")
	}
	if st, body, ra := newBrowser(t, f.URL).loginStatus(`{"user":"viewer","password":"correct horse battery"}`); st != 429 || ra == "" {
		t.Fatalf("right password while limited: %d %s (Retry-After %q), want 429", st, body, ra)
	}
	// The same limiter guards the SQL endpoint: the wire login of viewer
	// from this address is refused too (SQLSTATE 28000 throttled).
	if err := sqlLogin(f, "viewer", "correct horse battery"); err == nil || !strings.Contains(err.Error(), "too many failed login attempts") {
		t.Fatalf("SQL endpoint login while the console's failures blocked the key: %v", err)
	}
	// Another user from the same address is not limited.
	setSQLPassword(t, f, "nopass", "other pw")
	if st, body, _ := newBrowser(t, f.URL).loginStatus(`{"user":"nopass","password":"other pw"}`); st != 200 {
		t.Fatalf("another user: %d %s", st, body)
	}

	// Audit: console.login events with their method, no password in them.
	r := f.Do(t, "GET", "/api/v1/audit?action=console.login&limit=100", nil)
	if r.Status != 200 {
		t.Fatalf("audit: %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), "correct horse") || strings.Contains(string(r.Body), "wrong") && strings.Contains(string(r.Body), `"password"`) {
		t.Fatalf("a password reached the audit log: %s", r.Body)
	}
	var page struct {
		Records []struct {
			Principal, Outcome string
			Detail             map[string]any `json:"detail"`
		} `json:"records"`
	}
	if err := json.Unmarshal(r.Body, &page); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range page.Records {
		count[e.Principal+" "+e.Outcome+" "+toString(e.Detail["method"])+" "+toString(e.Detail["reason"])]++
	}
	for k, want := range map[string]int{
		"viewer success sql_password ":         1,
		"nopass success sql_password ":         1,
		"nobody failure sql_password ":         1,
		"viewer denied sql_password throttled": 2,
	} {
		if count[k] != want {
			t.Errorf("audit %q: %d events, want %d (all: %v)", k, count[k], want, count)
		}
	}
	if count["viewer failure sql_password "] != 10 {
		t.Errorf("audit: %d failed viewer sign-ins, want 10 (all: %v)", count["viewer failure sql_password "], count)
	}
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// TestSecretSignInAudited: a client-secret sign-in is audited as
// console.login with method client_secret, and a wrong secret too.
func TestSecretSignInAudited(t *testing.T) {
	f := testkit.Start(t)
	b := newBrowser(t, f.URL)
	b.login(f.Cred.ClientID, f.Cred.Secret)
	if st, _, _ := newBrowser(t, f.URL).loginStatus(`{"client_id":"` + f.Cred.ClientID + `","client_secret":"nope"}`); st != 401 {
		t.Fatalf("wrong secret: %d", st)
	}
	r := f.Do(t, "GET", "/api/v1/audit?action=console.login&limit=10", nil)
	if r.Status != 200 || strings.Contains(string(r.Body), f.Cred.Secret) || strings.Contains(string(r.Body), "nope") {
		t.Fatalf("audit: %d %s", r.Status, r.Body)
	}
	var page struct {
		Records []struct {
			Principal, Outcome string
			Detail             map[string]any `json:"detail"`
		} `json:"records"`
	}
	_ = json.Unmarshal(r.Body, &page)
	if len(page.Records) != 2 || page.Records[0].Outcome != "failure" || page.Records[1].Outcome != "success" ||
		page.Records[1].Principal != "admin" || page.Records[0].Detail["method"] != "client_secret" || page.Records[1].Detail["method"] != "client_secret" {
		t.Fatalf("console.login events: %s", r.Body)
	}
}
