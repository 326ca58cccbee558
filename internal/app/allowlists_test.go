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
