package remote

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	floe "github.com/floe-lake/floe"
)

// TestSignStaysUnderTheCatalog: Sign sends the signer request only to a
// signer under the catalog's own URI; a remote naming another host, or a
// path that climbs out, is refused before any request, and the token a
// remote hands back in a signing answer is never kept.
func TestSignStaysUnderTheCatalog(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	var signed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/config":
			writeJSON(w, 200, `{"defaults":{},"overrides":{"prefix":"p"}}`)
		case strings.HasSuffix(r.URL.Path, "/sign"):
			signed.Add(1)
			writeJSON(w, 200, `{"uri":"http://s3/b/k","headers":{"Authorization":["AWS4-HMAC-SHA256 x"]}}`)
		case r.Header.Get("X-Iceberg-Access-Delegation") == "remote-signing":
			writeJSON(w, 200, `{"metadata":{"format-version":2},"config":{"s3.remote-signing-enabled":"true","token":"floe-identity-token","s3.signer.endpoint":"v1/p/namespaces/a/tables/t/sign"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx := context.Background()
	lt, err := c.LoadTableSigning(ctx, []string{"a"}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lt.Config["token"]; ok {
		t.Fatalf("the signing answer kept the remote's token: %v", lt.Config)
	}
	out, err := c.Sign(ctx, lt.Config, []byte(`{"method":"GET"}`))
	if err != nil || !strings.Contains(string(out), "Authorization") || signed.Load() != 1 {
		t.Fatalf("sign: %s, %v (signer called %d times)", out, err, signed.Load())
	}
	for _, cfg := range []map[string]string{
		{"s3.remote-signing-enabled": "true", "s3.signer.uri": other.URL, "s3.signer.endpoint": "v1/sign"},
		{"s3.remote-signing-enabled": "true", "s3.signer.endpoint": "../../sign"},
		{"s3.remote-signing-enabled": "true", "s3.signer.endpoint": "v1/p/sign?x=1"},
		{"s3.remote-signing-enabled": "true", "s3.signer.uri": srv.URL + ".evil.example", "s3.signer.endpoint": "v1/sign"},
	} {
		if _, err := c.Sign(ctx, cfg, []byte(`{}`)); floe.KindOf(err) != floe.Unavailable {
			t.Errorf("%v: %v", cfg, err)
		}
	}
	if _, err := c.Sign(ctx, map[string]string{}, []byte(`{}`)); floe.KindOf(err) != floe.Unsupported {
		t.Errorf("no remote signing: %v", err)
	}
	if elsewhere.Load() != 0 || signed.Load() != 1 {
		t.Fatalf("requests sent elsewhere: %d, to the signer: %d", elsewhere.Load(), signed.Load())
	}
}
