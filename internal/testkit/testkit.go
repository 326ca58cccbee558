// Package testkit starts real Floe servers on random loopback ports for
// tests, with HTTP clients whose every exchange is validated against the
// Iceberg REST OpenAPI spec.
package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/spectest"
)

// Floe is a running test server.
type Floe struct {
	App       *app.App
	URL       string
	Cred      app.Credential
	Warehouse string
	Dir       string
	Transport *spectest.Transport
	// SQLAddr is the address of the SQL endpoint (PostgreSQL wire), "" when
	// an Option turned it off.
	SQLAddr string
	// ClientTransport validates only Floe's responses; give it to third-party
	// clients (iceberg-go), whose requests are theirs to get right.
	ClientTransport *spectest.Transport

	token string
}

// Option adjusts the configuration before start.
type Option func(*app.Config)

// Start runs Floe on 127.0.0.1:0 over a fresh data directory and stops it at cleanup.
func Start(t testing.TB, opts ...Option) *Floe {
	t.Helper()
	dir := t.TempDir()
	cfg := app.Defaults()
	cfg.DataDir = dir
	cfg.Listen = "127.0.0.1:0"
	cfg.S3Listen = "127.0.0.1:0"
	cfg.SQLListen = "127.0.0.1:0"
	cfg.AdminListen = "127.0.0.1:0" // metrics on a port of its own: tests never race for 9090
	cfg.BootstrapCredential = "test-admin:test-admin-secret"
	cfg.AuditExportInterval = 0 // no system.audit in other tests' listings; tests of the export turn it on
	if dsn := os.Getenv("FLOE_TEST_STORE"); dsn != "" {
		cfg.Store = dsn
	}
	for _, o := range opts {
		o(&cfg)
	}
	lvl := slog.LevelWarn
	if os.Getenv("FLOE_TEST_DEBUG") != "" {
		lvl = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	a, err := app.Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("start floe: %v", err)
	}
	if err := a.Start(); err != nil {
		t.Fatalf("start floe: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Errorf("stop floe: %v", err)
		}
	})
	spec, err := spectest.Load()
	if err != nil {
		t.Fatal(err)
	}
	f := &Floe{App: a, URL: a.URL(), SQLAddr: a.SQLAddr(), Warehouse: cfg.Warehouse, Dir: dir,
		Cred: app.Credential{ClientID: "test-admin", Secret: "test-admin-secret"}}
	f.Transport = &spectest.Transport{Spec: spec, Report: t, Skip: func(r *http.Request) bool {
		return !strings.HasPrefix(r.URL.Path, "/v1/")
	}}
	f.ClientTransport = &spectest.Transport{Spec: spec, Report: t, Skip: f.Transport.Skip, ResponsesOnly: true}
	return f
}

// Client returns an HTTP client whose exchanges are validated against the spec.
func (f *Floe) Client() *http.Client {
	return &http.Client{Transport: f.Transport, Timeout: time.Minute}
}

// Token returns an admin access token obtained through the token endpoint.
func (f *Floe) Token(t testing.TB) string {
	t.Helper()
	if f.token != "" {
		return f.token
	}
	f.token = f.TokenFor(t, f.Cred.ClientID, f.Cred.Secret)
	return f.token
}

// TokenFor obtains a token with the client-credentials grant.
func (f *Floe) TokenFor(t testing.TB, id, secret string) string {
	t.Helper()
	return f.TokenScoped(t, id, secret, "catalog")
}

// TokenScoped obtains a token with the client-credentials grant and scope.
func (f *Floe) TokenScoped(t testing.TB, id, secret, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {scope}}
	resp, err := f.Client().PostForm(f.URL+"/v1/oauth/tokens", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil || out.AccessToken == "" {
		t.Fatalf("token request: status %d", resp.StatusCode)
	}
	return out.AccessToken
}

// Response is a captured HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Do sends a request with the admin token. body may be nil, a []byte, a
// string or any JSON-encodable value. headers are name, value pairs.
func (f *Floe) Do(t testing.TB, method, path string, body any, headers ...string) Response {
	t.Helper()
	return f.DoAs(t, f.Token(t), method, path, body, headers...)
}

// DoAs is Do with a given bearer token ("" sends none).
func (f *Floe) DoAs(t testing.TB, token, method, path string, body any, headers ...string) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, f.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// LocalPath maps a location in the embedded warehouse (s3://<warehouse>/key)
// to the file that holds it (ciphertext when encryption is on).
func (f *Floe) LocalPath(location string) string {
	key := strings.TrimPrefix(location, "s3://"+f.Warehouse+"/")
	return filepath.Join(f.App.Config().WarehouseDir, filepath.FromSlash(key))
}

// P prefixes a path with /v1/<warehouse>.
func (f *Floe) P(path string) string { return "/v1/" + f.Warehouse + path }

// Table is what creating a table returned: where it lives and the storage
// access vended with it.
type Table struct {
	MetadataLocation string            `json:"metadata-location"`
	Config           map[string]string `json:"config"`
	Metadata         struct {
		Location string `json:"location"`
	} `json:"metadata"`
}

// CreateTable creates namespace ns (if needed) and a one-column table in
// it with the admin token, failing the test on error.
func (f *Floe) CreateTable(t testing.TB, ns, name string) Table {
	t.Helper()
	if r := f.Do(t, "POST", f.P("/namespaces"), map[string]any{"namespace": []string{ns}}); r.Status != 200 && r.Status != 409 {
		t.Fatalf("create namespace %s: %d %s", ns, r.Status, r.Body)
	}
	r := f.Do(t, "POST", f.P("/namespaces/"+ns+"/tables"), map[string]any{"name": name,
		"schema": json.RawMessage(`{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}`)})
	if r.Status != 200 {
		t.Fatalf("create table %s.%s: %d %s", ns, name, r.Status, r.Body)
	}
	var tb Table
	r.JSON(t, &tb)
	return tb
}
