package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	floe "github.com/floe-lake/floe"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// seen is one request the fake remote received.
type seen struct {
	Method, Path, Query string
	Header              http.Header
	Form                url.Values
}

// fake is a remote catalog whose answers a test scripts. /v1/config
// answers with prefix "p" unless the test handles it.
type fake struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []seen
	handler func(w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *fake {
	t.Helper()
	f := &fake{handler: h}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone()}
		if r.Method == http.MethodPost {
			_ = r.ParseForm()
			s.Form = r.PostForm
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, s)
		h := f.handler
		f.mu.Unlock()
		if r.URL.Path == "/v1/config" && h == nil {
			writeJSON(w, 200, `{"defaults":{},"overrides":{"prefix":"p"}}`)
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// requests returns what the remote received, without /v1/config and token calls.
func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seen
	for _, s := range f.reqs {
		if s.Path != "/v1/config" && s.Path != "/v1/oauth/tokens" {
			out = append(out, s)
		}
	}
	return out
}

func (f *fake) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.reqs {
		if s.Path == path {
			n++
		}
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// withConfig answers /v1/config with prefix "p" and everything else with h.
func withConfig(h http.HandlerFunc) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/config" {
			writeJSON(w, 200, `{"defaults":{},"overrides":{"prefix":"p"}}`)
			return
		}
		h(w, r)
	}
}

func newClient(t *testing.T, uri string, mod ...func(*Options)) *Client {
	t.Helper()
	o := Options{Name: "ext", URI: uri, Auth: Auth{Kind: "none"}}
	for _, m := range mod {
		m(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"no name", Options{URI: "http://x"}},
		{"relative uri", Options{Name: "n", URI: "/v1"}},
		{"ftp uri", Options{Name: "n", URI: "ftp://x"}},
		{"userinfo", Options{Name: "n", URI: "http://u:p@x"}},
		{"query", Options{Name: "n", URI: "http://x?a=b"}},
		{"bad kind", Options{Name: "n", URI: "http://x", Auth: Auth{Kind: "sigv5"}}},
		{"bearer without token", Options{Name: "n", URI: "http://x", Auth: Auth{Kind: "bearer"}}},
		{"oauth2 without secret", Options{Name: "n", URI: "http://x", Auth: Auth{Kind: "oauth2", ClientID: "id"}}},
		{"oauth2 bad token url", Options{Name: "n", URI: "http://x", Auth: Auth{Kind: "oauth2", ClientID: "id", ClientSecret: "s", TokenURL: "tokens"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.o); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	for _, o := range []Options{
		{Name: "n", URI: "https://glue.us-east-1.amazonaws.com/iceberg/"},
		{Name: "n", URI: "http://x", Auth: Auth{Kind: "bearer", Token: "t"}},
		{Name: "n", URI: "http://x", Auth: Auth{Kind: "oauth2", ClientID: "id", ClientSecret: "s"}},
	} {
		c, err := New(o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		c.Close()
	}
}

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
		wantErr            bool
	}{
		{"overrides", `{"defaults":{"prefix":"d"},"overrides":{"prefix":"o"}}`, "o", false},
		{"defaults", `{"defaults":{"prefix":"d"},"overrides":{}}`, "d", false},
		{"none", `{"defaults":{},"overrides":{}}`, "", false},
		{"glue layout", `{"overrides":{"prefix":"catalogs/123456789012"}}`, "catalogs/123456789012", false},
		{"escaped segment", `{"overrides":{"prefix":"my wh"}}`, "my%20wh", false},
		{"dot segment", `{"overrides":{"prefix":"a/../b"}}`, "", true},
		{"garbage", `{"overrides":`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tc.config) })
			c := newClient(t, f.srv.URL+"/", func(o *Options) { o.Warehouse = "wh 1" })
			p, err := c.Prefix(context.Background())
			if tc.wantErr {
				if floe.KindOf(err) != floe.Unavailable {
					t.Fatalf("err %v, want Unavailable", err)
				}
				return
			}
			if err != nil || p != tc.want {
				t.Fatalf("prefix %q, %v; want %q", p, err, tc.want)
			}
			if _, err := c.Prefix(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := f.count("/v1/config"); n != 1 {
				t.Fatalf("%d config requests, want 1 (cached)", n)
			}
			if q := f.reqs[0].Query; q != "warehouse=wh+1" {
				t.Fatalf("config query %q", q)
			}
		})
	}
}

func TestPathsAndQueries(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		call        func(c *Client) error
		path, query string
	}{
		{"list top namespaces", func(c *Client) error { _, err := c.ListNamespaces(ctx, nil); return err }, "/base/v1/p/namespaces", ""},
		{"list child namespaces", func(c *Client) error { _, err := c.ListNamespaces(ctx, []string{"a", "b c"}); return err }, "/base/v1/p/namespaces", "parent=a%1Fb+c"},
		{"load namespace", func(c *Client) error { _, err := c.LoadNamespace(ctx, []string{"a", "b"}); return err }, "/base/v1/p/namespaces/a%1Fb", ""},
		{"list tables", func(c *Client) error { _, err := c.ListTables(ctx, []string{"a", "b"}); return err }, "/base/v1/p/namespaces/a%1Fb/tables", ""},
		{"list views", func(c *Client) error { _, err := c.ListViews(ctx, []string{"a"}); return err }, "/base/v1/p/namespaces/a/views", ""},
		{"load table", func(c *Client) error { _, err := c.LoadTable(ctx, []string{"a", "b"}, "t/x y", false); return err }, "/base/v1/p/namespaces/a%1Fb/tables/t%2Fx%20y", ""},
		{"load view", func(c *Client) error { _, err := c.LoadView(ctx, []string{"a"}, "v"); return err }, "/base/v1/p/namespaces/a/views/v", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/base/v1/config":
					writeJSON(w, 200, `{"overrides":{"prefix":"p"}}`)
				case strings.Contains(r.URL.Path, "/tables/"), strings.Contains(r.URL.Path, "/views/"):
					writeJSON(w, 200, `{"metadata-location":"m","metadata":{}}`)
				default:
					writeJSON(w, 200, `{"namespaces":[],"identifiers":[],"properties":{}}`)
				}
			})
			c := newClient(t, f.srv.URL+"/base", func(o *Options) { o.Header = http.Header{"X-Extra": {"1"}} })
			if err := tc.call(c); err != nil {
				t.Fatal(err)
			}
			var got []seen
			for _, s := range f.reqs {
				if s.Path != "/base/v1/config" {
					got = append(got, s)
				}
			}
			if len(got) != 1 || got[0].Path != tc.path || got[0].Query != tc.query {
				t.Fatalf("requests %+v, want %s?%s", got, tc.path, tc.query)
			}
			if got[0].Header.Get("X-Extra") != "1" || got[0].Header.Get("Authorization") != "" {
				t.Fatalf("headers %v", got[0].Header)
			}
		})
	}
	// invalid names never reach the remote
	c := newClient(t, "http://127.0.0.1:1")
	for _, err := range []error{
		func() error { _, err := c.LoadTable(ctx, nil, "t", false); return err }(),
		func() error { _, err := c.LoadTable(ctx, []string{"a\x1fb"}, "t", false); return err }(),
		func() error { _, err := c.LoadView(ctx, []string{"a"}, ""); return err }(),
		func() error { _, err := c.ListTables(ctx, []string{""}); return err }(),
	} {
		if floe.KindOf(err) != floe.Invalid {
			t.Errorf("err %v, want Invalid", err)
		}
	}
}

func TestPagination(t *testing.T) {
	ctx := context.Background()
	pages := map[string]string{
		"":   `{"identifiers":[{"namespace":["a"],"name":"t1"}],"next-page-token":"p2"}`,
		"p2": `{"identifiers":[{"namespace":["a"],"name":"t2"}],"next-page-token":"p3"}`,
		"p3": `{"identifiers":[{"namespace":["a"],"name":"t3"}],"next-page-token":null}`,
	}
	for _, tc := range []struct {
		name     string
		maxPages int
		endless  bool
		want     string
		requests int
	}{
		{"followed", 0, false, "a.t1,a.t2,a.t3", 3},
		{"bound exactly reached", 3, false, "a.t1,a.t2,a.t3", 3},
		{"bound exceeded", 2, false, "", 2},
		{"endless remote stops at default bound", 0, true, "", DefaultMaxListPages},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) {
				tok := r.URL.Query().Get("pageToken")
				if tc.endless {
					n++
					writeJSON(w, 200, fmt.Sprintf(`{"identifiers":[],"next-page-token":"t%d"}`, n))
					return
				}
				writeJSON(w, 200, pages[tok])
			}))
			c := newClient(t, f.srv.URL, func(o *Options) { o.MaxListPages = tc.maxPages })
			ids, err := c.ListTables(ctx, []string{"a"})
			if got := len(f.requests()); got != tc.requests {
				t.Fatalf("%d requests, want %d", got, tc.requests)
			}
			if tc.want == "" {
				if floe.KindOf(err) != floe.Unavailable || !strings.Contains(err.Error(), "pages") {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, id := range ids {
				names = append(names, id.String())
			}
			if strings.Join(names, ",") != tc.want {
				t.Fatalf("got %v", names)
			}
			if q := f.requests()[1].Query; q != "pageToken=p2" {
				t.Fatalf("second page query %q", q)
			}
		})
	}
}

// oauthFake is a remote with a token endpoint that counts tokens issued
// and a catalog that accepts only the tokens in valid.
type oauthFake struct {
	*fake
	mu        sync.Mutex
	issued    int
	valid     map[string]bool
	expiresIn string // JSON value, "" for none
	refuse    bool   // the token endpoint answers 401 invalid_client
}

func newOAuthFake(t *testing.T) *oauthFake {
	o := &oauthFake{valid: map[string]bool{}, expiresIn: "100"}
	o.fake = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		defer o.mu.Unlock()
		switch r.URL.Path {
		case "/v1/oauth/tokens":
			if o.refuse || r.PostForm.Get("client_secret") != "s3cr3t-value" {
				writeJSON(w, 401, `{"error":"invalid_client","error_description":"bad client"}`)
				return
			}
			o.issued++
			tok := fmt.Sprintf("tok-%d-SECRET", o.issued)
			o.valid[tok] = true
			exp := ""
			if o.expiresIn != "" {
				exp = `,"expires_in":` + o.expiresIn
			}
			writeJSON(w, 200, `{"access_token":"`+tok+`","token_type":"bearer"`+exp+`}`)
		case "/v1/config":
			writeJSON(w, 200, `{"overrides":{"prefix":"p"}}`)
		default:
			if !o.valid[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
				writeJSON(w, 401, `{"error":{"message":"Not authorized","type":"NotAuthorizedException","code":401}}`)
				return
			}
			writeJSON(w, 200, `{"namespaces":[["a"]]}`)
		}
	})
	return o
}

func TestOAuth2(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	var calls []Call
	var callsMu sync.Mutex
	setup := func(t *testing.T) (*oauthFake, *Client, *clock) {
		o := newOAuthFake(t)
		clk := newClock()
		c := newClient(t, o.srv.URL, func(op *Options) {
			op.Auth = Auth{Kind: "oauth2", ClientID: "cid", ClientSecret: "s3cr3t-value"}
			op.Now = clk.Now
			op.CacheTTL = -1
			op.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			op.Audit = func(_ context.Context, c Call) { callsMu.Lock(); calls = append(calls, c); callsMu.Unlock() }
		})
		return o, c, clk
	}
	list := func(c *Client) error { _, err := c.ListNamespaces(ctx, nil); return err }

	t.Run("fetch with client_secret_post and default scope", func(t *testing.T) {
		o, c, _ := setup(t)
		if err := list(c); err != nil {
			t.Fatal(err)
		}
		var tokReq seen
		for _, s := range o.reqs {
			if s.Path == "/v1/oauth/tokens" {
				tokReq = s
			}
		}
		want := url.Values{"grant_type": {"client_credentials"}, "client_id": {"cid"}, "client_secret": {"s3cr3t-value"}, "scope": {"catalog"}}
		if fmt.Sprint(tokReq.Form) != fmt.Sprint(want) {
			t.Fatalf("token form %v", tokReq.Form)
		}
		if got := o.requests()[0].Header.Get("Authorization"); got != "Bearer tok-1-SECRET" {
			t.Fatalf("authorization %q", got)
		}
	})
	for _, tc := range []struct {
		name      string
		expiresIn string
		before    time.Duration // still the first token
		after     time.Duration // renewed
	}{
		{"renewed at 60% of expires_in", "100", 59 * time.Second, 2 * time.Second},
		{"string expires_in", `"100"`, 59 * time.Second, 2 * time.Second},
		{"every 10 min without expires_in", "", 9*time.Minute + 59*time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, c, clk := setup(t)
			o.expiresIn = tc.expiresIn
			if err := list(c); err != nil {
				t.Fatal(err)
			}
			clk.Add(tc.before)
			if err := list(c); err != nil || o.issued != 1 {
				t.Fatalf("issued %d, %v; want the first token reused", o.issued, err)
			}
			clk.Add(tc.after)
			if err := list(c); err != nil || o.issued != 2 {
				t.Fatalf("issued %d, %v; want a renewal", o.issued, err)
			}
		})
	}
	t.Run("401 renews once and retries", func(t *testing.T) {
		o, c, _ := setup(t)
		if err := list(c); err != nil {
			t.Fatal(err)
		}
		o.mu.Lock()
		o.valid = map[string]bool{} // the remote forgot the token
		o.mu.Unlock()
		if err := list(c); err != nil {
			t.Fatal(err)
		}
		if o.issued != 2 || len(o.requests()) != 3 {
			t.Fatalf("issued %d tokens, %d catalog requests", o.issued, len(o.requests()))
		}
	})
	t.Run("persistent 401 is Unavailable after one renewal", func(t *testing.T) {
		o, c, _ := setup(t)
		o.fake.handler = func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/oauth/tokens" {
				o.issued++
				writeJSON(w, 200, fmt.Sprintf(`{"access_token":"tok-%d-SECRET","expires_in":100}`, o.issued))
				return
			}
			writeJSON(w, 401, `{"error":{"message":"Not authorized","type":"NotAuthorizedException","code":401}}`)
		}
		err := list(c)
		if floe.KindOf(err) != floe.Unavailable || !strings.Contains(floe.PublicMessage(err), "refused Floe's credentials (HTTP 401)") ||
			!strings.Contains(floe.PublicMessage(err), "foreign catalog ext") {
			t.Fatalf("err %v", err)
		}
		if o.issued != 2 || o.count("/v1/config") != 2 {
			t.Fatalf("issued %d tokens, %d config requests", o.issued, o.count("/v1/config"))
		}
	})
	t.Run("token endpoint refusal", func(t *testing.T) {
		o, c, _ := setup(t)
		o.refuse = true
		err := list(c)
		if floe.KindOf(err) != floe.Unavailable || !strings.Contains(floe.PublicMessage(err), "refused Floe's credentials (token endpoint HTTP 401): invalid_client") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("secrets never in errors, calls or logs", func(t *testing.T) {
		if len(calls) == 0 || logs.Len() == 0 {
			t.Fatalf("nothing recorded: %d calls, %d log bytes", len(calls), logs.Len())
		}
		for _, cl := range calls {
			s := fmt.Sprintf("%+v", cl)
			if strings.Contains(s, "SECRET") || strings.Contains(s, "s3cr3t") {
				t.Fatalf("call %s", s)
			}
		}
		if strings.Contains(logs.String(), "SECRET") || strings.Contains(logs.String(), "s3cr3t") {
			t.Fatalf("log %s", logs.String())
		}
	})
}

func TestBearerAndNone(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, kind, token, wantHeader string
	}{
		{"bearer", "bearer", "static-SECRET", "Bearer static-SECRET"},
		{"none", "none", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := 200
			f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, status, `{"namespaces":[]}`)
			}))
			c := newClient(t, f.srv.URL, func(o *Options) { o.Auth = Auth{Kind: tc.kind, Token: tc.token}; o.CacheTTL = -1 })
			if _, err := c.ListNamespaces(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if got := f.requests()[0].Header.Get("Authorization"); got != tc.wantHeader {
				t.Fatalf("authorization %q", got)
			}
			status = 401
			_, err := c.ListNamespaces(ctx, nil)
			if floe.KindOf(err) != floe.Unavailable || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("err %v", err)
			}
			if n := len(f.requests()); n != 2 {
				t.Fatalf("%d requests: a static credential is not retried", n)
			}
		})
	}
}

// TestErrorMapping: each remote failure maps to one domain error kind
// naming the foreign catalog, and only the ErrorModel message of the
// remote's body reaches the message.
func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	errBody := func(msg string) string {
		return `{"error":{"message":` + strconvQuote(msg) + `,"type":"X","code":1},"stack":["SECRET-INTERNAL"]}`
	}
	long := strings.Repeat("é", 1000)
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}()
	type call func(c *Client) error
	loadTable := func(c *Client) error { _, err := c.LoadTable(ctx, []string{"a"}, "t", false); return err }
	loadView := func(c *Client) error { _, err := c.LoadView(ctx, []string{"a"}, "v"); return err }
	listTables := func(c *Client) error { _, err := c.ListTables(ctx, []string{"a"}); return err }
	loadNS := func(c *Client) error { _, err := c.LoadNamespace(ctx, []string{"a"}); return err }
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		delay   time.Duration
		uri     string // instead of the fake
		call    call
		kind    floe.Kind
		entity  string
		msg     string
		notInIt string
	}{
		{name: "404 table", status: 404, body: errBody("Table does not exist: a.t"), call: loadTable, kind: floe.NotFound, entity: "table",
			msg: "table a.t does not exist in foreign catalog ext: Table does not exist: a.t", notInIt: "SECRET"},
		{name: "404 view", status: 404, body: errBody("no view"), call: loadView, kind: floe.NotFound, entity: "view", msg: "view a.v does not exist in foreign catalog ext: no view"},
		{name: "404 namespace of a list", status: 404, body: errBody("no ns"), call: listTables, kind: floe.NotFound, entity: "namespace", msg: "namespace a does not exist in foreign catalog ext: no ns"},
		{name: "404 namespace", status: 404, body: `<html>SECRET</html>`, call: loadNS, kind: floe.NotFound, entity: "namespace", msg: "namespace a does not exist in foreign catalog ext", notInIt: "SECRET"},
		{name: "400", status: 400, body: errBody("bad"), call: loadTable, kind: floe.Invalid, msg: "foreign catalog ext rejected the request (HTTP 400): bad"},
		{name: "422", status: 422, body: errBody("bad"), call: listTables, kind: floe.Invalid, msg: "(HTTP 422)"},
		{name: "401", status: 401, body: errBody("who"), call: loadTable, kind: floe.Unavailable, msg: "foreign catalog ext refused Floe's credentials (HTTP 401): who"},
		{name: "403", status: 403, body: errBody("no"), call: loadTable, kind: floe.Unavailable, msg: "foreign catalog ext refused Floe's credentials (HTTP 403)"},
		{name: "500", status: 500, body: errBody("boom"), call: loadTable, kind: floe.Unavailable, msg: "foreign catalog ext is unavailable: HTTP 500: boom"},
		{name: "503 without body", status: 503, call: loadNS, kind: floe.Unavailable, msg: "foreign catalog ext is unavailable: HTTP 503"},
		{name: "unexpected 302", status: 302, call: loadNS, kind: floe.Unavailable, msg: "unexpected HTTP 302"},
		{name: "message truncated", status: 500, body: errBody(long), call: loadTable, kind: floe.Unavailable, msg: strings.Repeat("é", 300) + "…", notInIt: strings.Repeat("é", 301)},
		{name: "garbage JSON", status: 200, body: `{"metadata":`, call: loadTable, kind: floe.Unavailable, msg: "malformed loadTable answer"},
		{name: "metadata not an object", status: 200, body: `{"metadata":"x"}`, call: loadTable, kind: floe.Unavailable, msg: "malformed loadTable answer"},
		{name: "oversized body", status: 200, body: `{"properties":{"k":"` + strings.Repeat("x", maxBody) + `"}}`, call: loadNS, kind: floe.Unavailable, msg: "answer larger than 8388608 bytes"},
		{name: "timeout", status: 200, body: `{}`, delay: 2 * time.Second, call: loadNS, kind: floe.Unavailable, msg: "foreign catalog ext is unavailable: request timed out"},
		{name: "connection refused", uri: closed, call: loadNS, kind: floe.Unavailable, msg: "foreign catalog ext is unavailable: connection refused"},
		{name: "host not found", uri: "http://floe-remote-test.invalid", call: loadNS, kind: floe.Unavailable, msg: "foreign catalog ext is unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := tc.uri
			if uri == "" {
				f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) {
					if tc.delay > 0 {
						select {
						case <-time.After(tc.delay):
						case <-r.Context().Done():
							return
						}
					}
					if tc.status == 302 {
						w.Header().Set("Location", "http://elsewhere/")
					}
					writeJSON(w, tc.status, tc.body)
				}))
				uri = f.srv.URL
			}
			var calls []Call
			c := newClient(t, uri, func(o *Options) {
				o.HTTPClient = defaultHTTPClient()
				o.HTTPClient.Timeout = 300 * time.Millisecond
				o.Audit = func(_ context.Context, c Call) { calls = append(calls, c) }
			})
			start := time.Now()
			err := tc.call(c)
			if time.Since(start) > 5*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			if floe.KindOf(err) != tc.kind || floe.EntityOf(err) != tc.entity && tc.kind == floe.NotFound {
				t.Fatalf("err %v: kind %v entity %q, want %v %q", err, floe.KindOf(err), floe.EntityOf(err), tc.kind, tc.entity)
			}
			msg := floe.PublicMessage(err)
			if !strings.Contains(msg, tc.msg) {
				t.Fatalf("message %q, want %q", msg, tc.msg)
			}
			if tc.notInIt != "" && strings.Contains(err.Error(), tc.notInIt) {
				t.Fatalf("error carries %q: %v", tc.notInIt, err)
			}
			if len(calls) == 0 || calls[len(calls)-1].Err == "" || calls[len(calls)-1].Catalog != "ext" {
				t.Fatalf("audit calls %+v", calls)
			}
		})
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestContextHonoured: a remote that never answers is given up on when the
// caller's context ends, well before the client timeout.
func TestContextHonoured(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	c := newClient(t, f.srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.LoadTable(ctx, []string{"a"}, "t", true)
	if floe.KindOf(err) != floe.Unavailable || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestAuditCall(t *testing.T) {
	f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"metadata-location":"m","metadata":{}}`)
	}))
	var calls []Call
	c := newClient(t, f.srv.URL, func(o *Options) { o.Audit = func(_ context.Context, c Call) { calls = append(calls, c) } })
	if _, err := c.LoadTable(context.Background(), []string{"a", "b"}, "t", true); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("calls %+v", calls)
	}
	want := Call{Catalog: "ext", Operation: "loadTable", Method: "GET", Path: "/v1/p/namespaces/a%1Fb/tables/t", Status: 200}
	got := calls[1]
	got.Latency = 0
	if got != want || calls[0].Operation != "getConfig" {
		t.Fatalf("call %+v, want %+v", calls, want)
	}
}
