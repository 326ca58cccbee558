package federation_test

import (
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/federation"
)

func TestFinish(t *testing.T) {
	env := map[string]string{"SECRET": "s3cr3t", "TOKEN": "tok"}
	getenv := func(k string) string { return env[k] }
	ok := func() federation.Catalog {
		return federation.Catalog{Name: "acme", URI: "https://floe.acme.example:8181", Warehouse: "floe", Auth: "oauth2",
			ClientID: "floe-isv", ClientSecretEnv: "SECRET"}
	}
	for _, tt := range []struct {
		name string
		mod  func(*federation.Catalog)
		want string // "" ok, else a part of the error
	}{
		{"oauth2", func(*federation.Catalog) {}, ""},
		{"bearer", func(c *federation.Catalog) { c.Auth, c.TokenEnv = "bearer", "TOKEN" }, ""},
		{"none", func(c *federation.Catalog) { c.Auth, c.ClientID = "", "" }, ""},
		{"bad name", func(c *federation.Catalog) { c.Name = "a b" }, "name"},
		{"shadows a warehouse", func(c *federation.Catalog) { c.Name = "FLOE" }, "taken"},
		{"bad uri", func(c *federation.Catalog) { c.URI = "ftp://x" }, "uri"},
		{"uri with credentials", func(c *federation.Catalog) { c.URI = "https://u:p@x" }, "uri"},
		{"type", func(c *federation.Catalog) { c.Type = "glue" }, "type"},
		{"empty secret", func(c *federation.Catalog) { c.ClientSecretEnv = "NOPE" }, "NOPE"},
		{"no client id", func(c *federation.Catalog) { c.ClientID = "" }, "client_id"},
		{"bearer without env", func(c *federation.Catalog) { c.Auth = "bearer" }, "token_env"},
		{"unknown auth", func(c *federation.Catalog) { c.Auth = "sigv5" }, "auth"},
		{"ttl", func(c *federation.Catalog) { c.CacheTTL = 2 * time.Hour }, "cache_ttl"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok()
			tt.mod(&c)
			cs := []federation.Catalog{c}
			err := federation.Finish(cs, getenv, "floe")
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cs[0].CacheTTL != federation.DefaultCacheTTL || cs[0].Type != "rest" {
					t.Fatalf("defaults not filled: %+v", cs[0])
				}
				if cs[0].Auth == "oauth2" && cs[0].ClientSecret != "s3cr3t" {
					t.Fatal("secret not read from the environment")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Finish = %v, want an error about %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatal("the secret is in the error")
			}
		})
	}
	two := []federation.Catalog{ok(), ok()}
	if err := federation.Finish(two, getenv); err == nil {
		t.Fatal("two catalogs of one name accepted")
	}
	many := make([]federation.Catalog, federation.MaxCatalogs+1)
	if err := federation.Finish(many, getenv); err == nil {
		t.Fatal("more than MaxCatalogs accepted")
	}
}
