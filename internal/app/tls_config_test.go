package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

func TestTLSConfigFromEnvAndValidation(t *testing.T) {
	env := map[string]string{
		"FLOE_TLS_CERT": "/c.pem", "FLOE_TLS_KEY": "/k.pem", "FLOE_TLS_CLIENT_CA": "/ca.pem",
		"FLOE_REST_TLS_CLIENT_AUTH": "require", "FLOE_S3_TLS_CLIENT_AUTH": "optional",
		"FLOE_TLS_CLIENT_PRINCIPALS": "cn:etl-job=etl, uri:spiffe://corp/a=b=bi",
	}
	c := app.Defaults()
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.TLSCert != "/c.pem" || c.TLSKey != "/k.pem" || c.TLSClientCA != "/ca.pem" || c.RESTTLSClientAuth != "require" || c.S3TLSClientAuth != "optional" {
		t.Fatalf("env not applied: %+v", c)
	}
	if c.TLSClientPrincipals["cn:etl-job"] != "etl" || c.TLSClientPrincipals["uri:spiffe://corp/a=b"] != "bi" {
		t.Fatalf("principals %v", c.TLSClientPrincipals)
	}
	for _, tc := range []struct {
		name string
		set  func(*app.Config)
		want string
	}{
		{"cert without key", func(c *app.Config) { c.TLSCert = "/c.pem" }, "tls_cert and tls_key"},
		{"s3 key without cert", func(c *app.Config) { c.S3TLSKey = "/k.pem" }, "s3_tls_cert and s3_tls_key"},
		{"self-signed and cert", func(c *app.Config) { c.TLSSelfSigned, c.TLSCert, c.TLSKey = true, "/c", "/k" }, "tls_self_signed and tls_cert"},
		{"client auth without TLS", func(c *app.Config) { c.RESTTLSClientAuth, c.TLSClientCA = "require", "/ca" }, "no TLS certificate"},
		{"client auth without CA", func(c *app.Config) { c.TLSSelfSigned, c.S3TLSClientAuth = true, "optional" }, "needs tls_client_ca"},
		{"unknown policy", func(c *app.Config) { c.TLSSelfSigned, c.RESTTLSClientAuth = true, "maybe" }, "off, optional or require"},
		{"bad map key", func(c *app.Config) { c.TLSClientPrincipals = map[string]string{"etl": "etl"} }, "cn:<common name>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := app.Defaults()
			c.DataDir = t.TempDir()
			tc.set(&c)
			err := c.Finish()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Finish: %v, want an error with %q", err, tc.want)
			}
		})
	}
	bad := map[string]string{"FLOE_TLS_CLIENT_PRINCIPALS": "cn:x"}
	d := app.Defaults()
	if err := d.LoadEnv(func(k string) string { return bad[k] }); err == nil {
		t.Error("a principal entry without = accepted")
	}
}

// The token cache of certificate callers holds at most one token per
// distinct principal of the map, whatever it is asked.
func TestCertTokenCacheBounded(t *testing.T) {
	f := testkit.Start(t, selfSigned, func(c *app.Config) {
		c.TLSClientPrincipals = map[string]string{"cn:a": "p1", "cn:b": "p2", "cn:c": "p1"}
	})
	trustFloe(t, f)
	ctx := context.Background()
	for _, p := range []string{"p1", "p2", "p3", "p4"} {
		f.NewPrincipal(t, p)
	}
	for _, p := range []string{"p1", "p2", "p1", "p3", "p4", "p2"} {
		if _, err := f.App.CertToken(ctx, p); err != nil {
			t.Fatal(err)
		}
		if n, max := f.App.CertTokens(); max != 2 || n > max {
			t.Fatalf("after %s: %d tokens cached, bound %d (want 2)", p, n, max)
		}
	}
	tok1, _ := f.App.CertToken(ctx, "p2")
	tok2, _ := f.App.CertToken(ctx, "p2")
	if tok1 != tok2 {
		t.Error("a cached token was not reused")
	}
}
