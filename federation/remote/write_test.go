package remote

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	floe "github.com/floe-lake/floe"
)

// TestWriteForwards: a write goes to the spec path under the remote's
// prefix with the body unchanged, its JSON content type, the client's
// bearer token and, when asked, the delegation header; the 2xx answer
// comes back; the call is audited with the identity.
func TestWriteForwards(t *testing.T) {
	var mu sync.Mutex
	var body []byte
	f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body = b
		mu.Unlock()
		writeJSON(w, 200, `{"metadata-location":"m","metadata":{"format-version":2}}`)
	}))
	var calls []Call
	c := newClient(t, f.srv.URL, func(o *Options) {
		o.Auth = Auth{Kind: "bearer", Token: "write-token"}
		o.Identity = "write"
		o.Audit = func(_ context.Context, cl Call) { calls = append(calls, cl) }
	})
	in := `{"name":"t","schema":{"type":"struct","fields":[]}}`
	res, err := c.Write(context.Background(), Write{Operation: "createTable", Method: "POST", Path: NamespacePath([]string{"a", "b"}, "tables"),
		Body: []byte(in), Delegate: true})
	if err != nil || res.Status != 200 || !strings.Contains(string(res.Body), `"metadata-location":"m"`) {
		t.Fatalf("write: %+v %v", res, err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	s := reqs[0]
	if s.Method != "POST" || s.Path != "/v1/p/namespaces/a%1Fb/tables" || s.Header.Get("Authorization") != "Bearer write-token" ||
		s.Header.Get("Content-Type") != "application/json" || s.Header.Get("X-Iceberg-Access-Delegation") != "vended-credentials" {
		t.Fatalf("request %+v", s)
	}
	mu.Lock()
	got := string(body)
	mu.Unlock()
	if got != in {
		t.Fatalf("body %q, want %q", got, in)
	}
	last := calls[len(calls)-1]
	if last.Operation != "createTable" || last.Identity != "write" || last.Status != 200 || last.Err != "" {
		t.Fatalf("audit %+v", last)
	}
	for _, bad := range []Write{{Operation: "x", Method: "GET", Path: "namespaces"}, {Operation: "x", Method: "POST", Path: "/v1/x"},
		{Operation: "x", Method: "POST", Path: "namespaces/../../oauth"}, {Operation: "x", Method: "POST", Path: "namespaces//tables"}} {
		if _, err := c.Write(context.Background(), bad); floe.KindOf(err) != floe.Invalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestWriteErrors: the remote's error answers keep their meaning for the
// Floe caller (status, the ErrorModel's type, its message cut), a lost or
// 5xx answer to a commit is Indeterminate, never a plain outage.
func TestWriteErrors(t *testing.T) {
	em := func(typ, msg string) string {
		return `{"error":{"message":"` + msg + `","type":"` + typ + `","code":0}}`
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		commit bool
		kind   floe.Kind
		entity string
		msg    string
	}{
		{"bad request", 400, em("BadRequestException", "bad schema"), false, floe.Invalid, "", "bad schema"},
		{"forbidden", 403, em("ForbiddenException", "writer lacks MODIFY"), false, floe.Forbidden, "privilege", "refused Floe's write identity"},
		{"unauthorized", 401, em("NotAuthorizedException", "expired"), false, floe.Unavailable, "", "refused Floe's write credentials"},
		{"no namespace", 404, em("NoSuchNamespaceException", "no ns"), false, floe.NotFound, "namespace", "no ns"},
		{"no table", 404, em("NoSuchTableException", "no t"), true, floe.NotFound, "table", "no t"},
		{"exists", 409, em("AlreadyExistsException", "exists"), false, floe.AlreadyExists, "table", "exists"},
		{"not empty", 409, em("NamespaceNotEmptyException", "has tables"), false, floe.NotEmpty, "namespace", "has tables"},
		{"commit failed", 409, em("CommitFailedException", "requirement failed"), true, floe.Conflict, "", "requirement failed"},
		{"commit conflict untyped", 409, `{}`, true, floe.Conflict, "", "HTTP 409"},
		{"unprocessable", 422, em("UnprocessableEntityException", "no"), false, floe.Unprocessable, "", "no"},
		{"unsupported", 406, em("UnsupportedOperationException", "no"), false, floe.Unsupported, "", "no"},
		{"commit 500", 500, em("CommitStateUnknownException", "unknown"), true, floe.Indeterminate, "", "may or may not have been applied"},
		{"commit 504", 504, ``, true, floe.Indeterminate, "", "may or may not have been applied"},
		{"commit 503", 503, em("ServiceUnavailableException", "busy"), true, floe.Unavailable, "", "busy"},
		{"create 500", 500, em("ServerError", "boom"), false, floe.Unavailable, "", "boom"},
		{"long message", 400, em("BadRequestException", strings.Repeat("x", 1000)), false, floe.Invalid, "", "xxx…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, tc.status, tc.body) }))
			c := newClient(t, f.srv.URL, func(o *Options) { o.Auth = Auth{Kind: "bearer", Token: "tok"} })
			_, err := c.Write(context.Background(), Write{Operation: "op", Method: "POST", Path: "namespaces/a/tables/t",
				Body: []byte(`{}`), Commit: tc.commit, Entity: "table", Object: "table a.t"})
			if floe.KindOf(err) != tc.kind || floe.EntityOf(err) != tc.entity {
				t.Fatalf("err %v (kind %v, entity %q), want %v %q", err, floe.KindOf(err), floe.EntityOf(err), tc.kind, tc.entity)
			}
			msg := floe.PublicMessage(err)
			if !strings.Contains(msg, tc.msg) || !strings.Contains(msg, "ext") || strings.Contains(msg, "tok") || len(msg) > 600 {
				t.Fatalf("message %q", msg)
			}
		})
	}
}

// TestWriteLostAnswer: a commit whose answer never arrives (the remote
// hangs past the timeout) is Indeterminate; one that could not be sent
// (connection refused) is Unavailable, as is a lost answer to a write
// that is no commit.
func TestWriteLostAnswer(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer close(release)
	hc := &http.Client{Timeout: 200 * time.Millisecond}
	c := newClient(t, f.srv.URL, func(o *Options) { o.HTTPClient = hc })
	if _, err := c.Prefix(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := c.Write(context.Background(), Write{Operation: "commitTable", Method: "POST", Path: "namespaces/a/tables/t", Body: []byte(`{}`), Commit: true})
	if floe.KindOf(err) != floe.Indeterminate || !strings.Contains(floe.PublicMessage(err), "may or may not") {
		t.Fatalf("lost commit: %v", err)
	}
	_, err = c.Write(context.Background(), Write{Operation: "dropTable", Method: "DELETE", Path: "namespaces/a/tables/t"})
	if floe.KindOf(err) != floe.Unavailable {
		t.Fatalf("lost drop: %v", err)
	}
	down := newClient(t, "http://127.0.0.1:1")
	down.mu.Lock()
	down.prefix, down.prefixAt, down.havePrefix = "p", time.Now(), true
	down.mu.Unlock()
	_, err = down.Write(context.Background(), Write{Operation: "commitTable", Method: "POST", Path: "namespaces/a/tables/t", Body: []byte(`{}`), Commit: true})
	if floe.KindOf(err) != floe.Unavailable {
		t.Fatalf("refused commit: %v", err)
	}
}

// TestWriteRetriesWithRenewedToken: a 401 to a write under OAuth2 renews
// the token and resends the same body once.
func TestWriteRetriesWithRenewedToken(t *testing.T) {
	var mu sync.Mutex
	tokens, bodies := 0, []string{}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/config":
			writeJSON(w, 200, `{"overrides":{"prefix":"p"}}`)
		case "/v1/oauth/tokens":
			mu.Lock()
			tokens++
			n := tokens
			mu.Unlock()
			writeJSON(w, 200, `{"access_token":"t`+string(rune('0'+n))+`","expires_in":3600}`)
		default:
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, string(b))
			mu.Unlock()
			if r.Header.Get("Authorization") == "Bearer t1" {
				writeJSON(w, 401, `{"error":{"message":"expired","type":"NotAuthorizedException","code":401}}`)
				return
			}
			w.WriteHeader(204)
		}
	})
	c := newClient(t, f.srv.URL, func(o *Options) { o.Auth = Auth{Kind: "oauth2", ClientID: "writer", ClientSecret: "s"} })
	res, err := c.Write(context.Background(), Write{Operation: "renameTable", Method: "POST", Path: "tables/rename", Body: []byte(`{"a":1}`)})
	if err != nil || res.Status != 204 {
		t.Fatalf("write: %+v %v", res, err)
	}
	if len(bodies) != 2 || bodies[0] != `{"a":1}` || bodies[1] != `{"a":1}` || tokens != 2 {
		t.Fatalf("bodies %q, tokens %d", bodies, tokens)
	}
}

// TestInvalidate: a write's invalidation drops the namespace lists, the
// namespace's properties and listings and the written table's loads,
// and keeps the rest.
func TestInvalidate(t *testing.T) {
	f := newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/p/namespaces":
			writeJSON(w, 200, `{"namespaces":[["a"],["b"]]}`)
		case strings.HasSuffix(r.URL.Path, "/tables"):
			writeJSON(w, 200, `{"identifiers":[{"namespace":["a"],"name":"t"}]}`)
		case strings.Contains(r.URL.Path, "/tables/"):
			writeJSON(w, 200, `{"metadata-location":"m","metadata":{"format-version":2}}`)
		default:
			writeJSON(w, 200, `{"namespace":["a"],"properties":{}}`)
		}
	}))
	c := newClient(t, f.srv.URL)
	ctx := context.Background()
	warm := func() {
		t.Helper()
		for _, err := range []error{
			func() error { _, err := c.ListNamespaces(ctx, nil); return err }(),
			func() error { _, err := c.LoadNamespace(ctx, []string{"a"}); return err }(),
			func() error { _, err := c.LoadNamespace(ctx, []string{"b"}); return err }(),
			func() error { _, err := c.ListTables(ctx, []string{"a"}); return err }(),
			func() error { _, err := c.LoadTable(ctx, []string{"a"}, "t", false); return err }(),
			func() error { _, err := c.LoadTable(ctx, []string{"a"}, "u", false); return err }(),
			func() error { _, err := c.LoadTable(ctx, []string{"b"}, "t", false); return err }(),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	warm()
	before := len(f.requests())
	warm()
	if n := len(f.requests()); n != before {
		t.Fatalf("the cache is cold: %d requests", n-before)
	}
	c.Invalidate([]string{"a"}, "t")
	warm()
	refetched := map[string]bool{}
	for _, s := range f.requests()[before:] {
		refetched[s.Path] = true
	}
	want := map[string]bool{"/v1/p/namespaces": true, "/v1/p/namespaces/a": true, "/v1/p/namespaces/a/tables": true, "/v1/p/namespaces/a/tables/t": true}
	if len(refetched) != len(want) {
		t.Fatalf("refetched %v, want %v", refetched, want)
	}
	for p := range want {
		if !refetched[p] {
			t.Fatalf("refetched %v, want %v", refetched, want)
		}
	}
}
