package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/console"
)

// fakeUpstream issues tokens "tok-N" for client "c<anything>" with secret
// "s3cret", answers whoami, and echoes every other request it receives.
type fakeUpstream struct {
	mu       sync.Mutex
	n        int
	requests []*http.Request
	bodies   []string
}

func (u *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.requests = append(u.requests, r)
	u.bodies = append(u.bodies, string(body))
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/oauth/tokens":
		form, _ := url.ParseQuery(string(body))
		if form.Get("client_secret") != "s3cret" || form.Get("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_client","error_description":"client authentication failed"}`)
			return
		}
		u.mu.Lock()
		u.n++
		n := u.n
		u.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-" + form.Get("client_id") + "-" + string(rune('0'+n)), "expires_in": 60, "token_type": "bearer"})
	case "/api/v1/whoami":
		_ = json.NewEncoder(w).Encode(map[string]any{"principal": "someone", "admin": false})
	default:
		_ = json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery,
			"authorization": r.Header.Get("Authorization"), "delegation": r.Header.Get("X-Iceberg-Access-Delegation"), "cookie": r.Header.Get("Cookie"), "csrf": r.Header.Get(console.CSRFHeader), "body": string(body)})
	}
}

// fakeTokens records revocations.
type fakeTokens struct {
	mu      sync.Mutex
	revoked []string
}

func (f *fakeTokens) Inspect(_ context.Context, raw string) (auth.TokenInfo, error) {
	if !strings.HasPrefix(raw, "tok-") {
		return auth.TokenInfo{}, errors.New("not a token")
	}
	return auth.TokenInfo{TokenID: raw, ExpiresAt: time.Now().Add(time.Minute)}, nil
}

func (f *fakeTokens) Revoke(_ context.Context, t auth.TokenInfo) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, t.TokenID)
	return true, nil
}

func (f *fakeTokens) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.revoked...)
}

type rig struct {
	h      *console.Handler
	up     *fakeUpstream
	tokens *fakeTokens
	now    time.Time
	events []audit.Event
}

func newRig(t *testing.T, maxSessions int) *rig {
	t.Helper()
	r := &rig{up: &fakeUpstream{}, tokens: &fakeTokens{}, now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	r.h = console.New(console.Options{Upstream: r.up, Tokens: r.tokens, MaxSessions: maxSessions,
		Now: func() time.Time { return r.now }, Audit: func(_ context.Context, e audit.Event) { r.events = append(r.events, e) }})
	return r
}

const origin = "http://floe.test"

// do serves one request; hdr is name, value pairs.
func (r *rig) do(method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, origin+path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	return w
}

type signedIn struct {
	cookie *http.Cookie
	csrf   string
}

func (r *rig) login(t *testing.T, client string) signedIn {
	t.Helper()
	w := r.do("POST", "/console/api/login", `{"client_id":"`+client+`","client_secret":"s3cret"}`, "Origin", origin, "Content-Type", "application/json")
	if w.Code != 200 {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	var info struct {
		CSRF string `json:"csrf_token"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &info); err != nil || info.CSRF == "" {
		t.Fatalf("login answer %s: %v", w.Body, err)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == console.CookieName {
			return signedIn{cookie: c, csrf: info.CSRF}
		}
	}
	t.Fatalf("login set no %s cookie: %v", console.CookieName, w.Header())
	return signedIn{}
}

func (s signedIn) cookieHeader() string { return console.CookieName + "=" + s.cookie.Value }

func TestLoginCookieFlags(t *testing.T) {
	r := newRig(t, 0)
	s := r.login(t, "c1")
	c := s.cookie
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != console.Prefix || c.Secure {
		t.Fatalf("cookie over plain HTTP: HttpOnly=%v SameSite=%v Path=%q Secure=%v; want HttpOnly, Strict, /console/, not Secure",
			c.HttpOnly, c.SameSite, c.Path, c.Secure)
	}
	if c.MaxAge != 60 {
		t.Fatalf("cookie MaxAge = %d, want the token's lifetime 60", c.MaxAge)
	}
	if strings.Contains(c.Value, "tok-") {
		t.Fatalf("the cookie carries the token: %q", c.Value)
	}
	// Over TLS the cookie is Secure.
	req := httptest.NewRequest("POST", "https://floe.test/console/api/login", strings.NewReader(`{"client_id":"c2","client_secret":"s3cret"}`))
	req.Header.Set("Origin", "https://floe.test")
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("TLS login: %d %s", w.Code, w.Body)
	}
	cs := w.Result().Cookies()
	if len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie over TLS: %+v; want Secure, HttpOnly, SameSite=Strict", cs)
	}
}

func TestLoginRefusals(t *testing.T) {
	r := newRig(t, 0)
	for _, tc := range []struct {
		name, body string
		hdr        []string
		status     int
	}{
		{"wrong secret", `{"client_id":"c1","client_secret":"nope"}`, []string{"Origin", origin}, 401},
		{"cross-origin", `{"client_id":"c1","client_secret":"s3cret"}`, []string{"Origin", "http://evil.test"}, 403},
		{"cross-site fetch", `{"client_id":"c1","client_secret":"s3cret"}`, []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"not JSON", `client_id=c1&client_secret=s3cret`, []string{"Origin", origin}, 400},
		{"no secret", `{"client_id":"c1"}`, []string{"Origin", origin}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := r.do("POST", "/console/api/login", tc.body, tc.hdr...)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			var e struct {
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code != tc.status {
				t.Fatalf("body %s is not an ErrorModel with code %d", w.Body, tc.status)
			}
			if len(w.Result().Cookies()) != 0 {
				t.Fatal("a refused sign-in set a cookie")
			}
		})
	}
}

func TestProxyUsesTheSessionsToken(t *testing.T) {
	r := newRig(t, 0)
	s := r.login(t, "c1")
	tok, _ := console.SessionToken(r.h, s.cookie.Value)
	w := r.do("GET", "/console/api/proxy/api/v1/grants?namespace=crm", "", "Cookie", s.cookieHeader(), "Authorization", "Bearer forged")
	if w.Code != 200 {
		t.Fatalf("proxy GET: %d %s", w.Code, w.Body)
	}
	var got map[string]string
	_ = json.Unmarshal(w.Body.Bytes(), &got)
	if got["path"] != "/api/v1/grants" || got["query"] != "namespace=crm" || got["authorization"] != "Bearer "+tok || got["cookie"] != "" ||
		got["delegation"] != "remote-signing" {
		t.Fatalf("upstream saw %v; want /api/v1/grants?namespace=crm with the session's token, no cookie, remote signing (no vended keys)", got)
	}
	// Another session's calls carry its own token.
	s2 := r.login(t, "c2")
	w = r.do("GET", "/console/api/proxy/v1/config", "", "Cookie", s2.cookieHeader())
	_ = json.Unmarshal(w.Body.Bytes(), &got)
	tok2, _ := console.SessionToken(r.h, s2.cookie.Value)
	if tok2 == tok || got["authorization"] != "Bearer "+tok2 {
		t.Fatalf("second session sent %q, want its own token %q", got["authorization"], tok2)
	}
	// Without a session nothing is forwarded.
	before := len(r.up.requests)
	if w := r.do("GET", "/console/api/proxy/v1/config", ""); w.Code != 401 {
		t.Fatalf("no cookie: %d, want 401", w.Code)
	}
	if w := r.do("GET", "/console/api/proxy/v1/config", "", "Cookie", console.CookieName+"=forged"); w.Code != 401 {
		t.Fatalf("forged cookie: %d, want 401", w.Code)
	}
	if len(r.up.requests) != before {
		t.Fatal("a request without a session reached the upstream")
	}
}

func TestProxyReachesOnlyTheAPIs(t *testing.T) {
	r := newRig(t, 0)
	s := r.login(t, "c1")
	for _, p := range []string{"/console/api/proxy/v1/oauth/tokens", "/console/api/proxy/v1/oauth/revoke", "/console/api/proxy/metrics",
		"/console/api/proxy/console/api/login", "/console/api/proxy/.well-known/openid-configuration",
		"/console/api/proxy/v1/./oauth/tokens", "/console/api/proxy/v1//oauth/tokens", "/console/api/proxy/api/v1/../../v1/oauth/tokens"} {
		before := len(r.up.requests)
		w := r.do("POST", p, "grant_type=client_credentials", "Cookie", s.cookieHeader(), "Origin", origin, console.CSRFHeader, s.csrf)
		if w.Code != 404 {
			t.Errorf("%s: %d, want 404", p, w.Code)
		}
		if len(r.up.requests) != before {
			t.Errorf("%s reached the upstream", p)
		}
	}
}

func TestCSRF(t *testing.T) {
	r := newRig(t, 0)
	s := r.login(t, "c1")
	body := `{"grantee":{"kind":"role","name":"r"},"privilege":"SELECT"}`
	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
	}{
		{"no token", []string{"Origin", origin}, 403},
		{"wrong token", []string{"Origin", origin, console.CSRFHeader, "x" + s.csrf}, 403},
		{"cross-origin with the token", []string{"Origin", "http://evil.test", console.CSRFHeader, s.csrf}, 403},
		{"cross-site fetch with the token", []string{"Sec-Fetch-Site", "cross-site", console.CSRFHeader, s.csrf}, 403},
		{"same origin with the token", []string{"Origin", origin, console.CSRFHeader, s.csrf}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.up.requests)
			w := r.do("POST", "/console/api/proxy/api/v1/grants", body, append([]string{"Cookie", s.cookieHeader()}, tc.hdr...)...)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if reached := len(r.up.requests) > before; reached != (tc.status == 200) {
				t.Fatalf("reached the upstream: %v", reached)
			}
			if tc.status == 200 {
				var got map[string]string
				_ = json.Unmarshal(w.Body.Bytes(), &got)
				if got["body"] != body || got["csrf"] != "" {
					t.Fatalf("upstream saw %v", got)
				}
			}
		})
	}
	// DELETE and PUT need it too; logout as well.
	for _, m := range []string{"PUT", "DELETE"} {
		if w := r.do(m, "/console/api/proxy/api/v1/tags", "{}", "Cookie", s.cookieHeader(), "Origin", origin); w.Code != 403 {
			t.Errorf("%s without the token: %d, want 403", m, w.Code)
		}
	}
	if w := r.do("POST", "/console/api/logout", "", "Cookie", s.cookieHeader(), "Origin", origin); w.Code != 403 {
		t.Fatalf("logout without the token: %d, want 403", w.Code)
	}
	if len(r.tokens.list()) != 0 {
		t.Fatal("a refused logout revoked the token")
	}
}

func TestLogoutRevokes(t *testing.T) {
	r := newRig(t, 0)
	s := r.login(t, "c1")
	tok, _ := console.SessionToken(r.h, s.cookie.Value)
	w := r.do("POST", "/console/api/logout", "", "Cookie", s.cookieHeader(), "Origin", origin, console.CSRFHeader, s.csrf)
	if w.Code != 204 {
		t.Fatalf("logout: %d %s", w.Code, w.Body)
	}
	if got := r.tokens.list(); len(got) != 1 || got[0] != tok {
		t.Fatalf("revoked %v, want [%s]", got, tok)
	}
	cs := w.Result().Cookies()
	if len(cs) != 1 || cs[0].MaxAge >= 0 || cs[0].Value != "" {
		t.Fatalf("logout cookie %+v, want it cleared", cs)
	}
	if w := r.do("GET", "/console/api/session", "", "Cookie", s.cookieHeader()); w.Code != 401 {
		t.Fatalf("session after logout: %d, want 401", w.Code)
	}
	if len(r.events) != 2 || r.events[0].Action != console.ActionLogin || r.events[1].Action != console.ActionLogout || r.events[1].Outcome != audit.OutcomeSuccess ||
		strings.Contains(r.events[1].Resource+r.events[1].Principal, tok) {
		t.Fatalf("audit %+v, want console.login, then one console.logout success naming no token", r.events)
	}
}

func TestSessionExpiresWithItsToken(t *testing.T) {
	r := newRig(t, 0)
	s := r.login(t, "c1")
	if w := r.do("GET", "/console/api/session", "", "Cookie", s.cookieHeader()); w.Code != 200 {
		t.Fatalf("session: %d", w.Code)
	}
	r.now = r.now.Add(61 * time.Second)
	if w := r.do("GET", "/console/api/proxy/v1/config", "", "Cookie", s.cookieHeader()); w.Code != 401 {
		t.Fatalf("after the token expired: %d, want 401", w.Code)
	}
	if n := console.SessionCount(r.h); n != 0 {
		t.Fatalf("%d sessions held after expiry, want 0", n)
	}
}

func TestSessionBound(t *testing.T) {
	r := newRig(t, 3)
	var ss []signedIn
	for i := range 5 {
		ss = append(ss, r.login(t, "c"+string(rune('a'+i))))
		r.now = r.now.Add(time.Second) // later sessions expire later
	}
	if n := console.SessionCount(r.h); n != 3 {
		t.Fatalf("%d sessions held, want the bound 3", n)
	}
	// The two expiring first were ended and their tokens revoked.
	if got := r.tokens.list(); len(got) != 2 || !strings.HasPrefix(got[0], "tok-ca-") || !strings.HasPrefix(got[1], "tok-cb-") {
		t.Fatalf("revoked %v, want the tokens of the first two sessions", got)
	}
	for i, s := range ss {
		want := 200
		if i < 2 {
			want = 401
		}
		if w := r.do("GET", "/console/api/session", "", "Cookie", s.cookieHeader()); w.Code != want {
			t.Errorf("session %d: %d, want %d", i, w.Code, want)
		}
	}
}

func TestStaticAndHeaders(t *testing.T) {
	r := newRig(t, 0)
	for _, p := range []string{"/console/", "/console/app.js", "/console/style.css", "/console/api/nothing", "/console/missing.js"} {
		w := r.do("GET", p, "")
		if csp := w.Header().Get("Content-Security-Policy"); csp != console.CSP {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", p, w.Header())
		}
	}
	if w := r.do("GET", "/console/", ""); w.Code != 200 || !strings.Contains(w.Body.String(), `<script type="module" src="app.js">`) {
		t.Fatalf("index: %d %s", w.Code, w.Body)
	}
	if w := r.do("GET", "/console", ""); w.Code != 302 || w.Header().Get("Location") != "/console/" {
		t.Fatalf("/console: %d %v", w.Code, w.Header())
	}
	if w := r.do("POST", "/console/", ""); w.Code != 405 {
		t.Fatalf("POST /console/: %d, want 405", w.Code)
	}
	if w := r.do("GET", "/console/api/login", ""); w.Code != 405 {
		t.Fatalf("GET login: %d, want 405", w.Code)
	}
	// No asset holds inline script or reaches another origin.
	idx := r.do("GET", "/console/", "").Body.String()
	if strings.Contains(idx, "<script>") || strings.Contains(idx, "http://") || strings.Contains(idx, "https://") {
		t.Fatalf("index.html has inline script or an external URL:\n%s", idx)
	}
}

// TestBehindAProxy: with an https public URL (a TLS-terminating proxy that
// rewrites Host), the cookie is Secure and the public origin passes the
// origin check; other origins still do not.
func TestBehindAProxy(t *testing.T) {
	up := &fakeUpstream{}
	h := console.New(console.Options{Upstream: up, Tokens: &fakeTokens{}, PublicURL: "https://lake.example.com"})
	login := func(origin string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "http://10.0.0.5:8181/console/api/login", strings.NewReader(`{"client_id":"c1","client_secret":"s3cret"}`))
		req.Header.Set("Origin", origin)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	w := login("https://lake.example.com")
	if w.Code != 200 {
		t.Fatalf("sign-in from the public origin: %d %s", w.Code, w.Body)
	}
	if cs := w.Result().Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Fatalf("cookie %+v, want Secure behind an https public URL", cs)
	}
	for _, o := range []string{"http://lake.example.com", "https://evil.example.com", "https://lake.example.com.evil.test"} {
		if w := login(o); w.Code != 403 {
			t.Errorf("sign-in from %s: %d, want 403", o, w.Code)
		}
	}
}
