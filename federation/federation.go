// Package federation configures foreign catalogs: remote Iceberg REST
// catalogs (another Floe, Polaris, Lakekeeper, Apache Iceberg's REST
// server, AWS Glue's Iceberg endpoint in a later slice) that Floe serves as
// warehouses of its own, read in place and governed by Floe's grants
// (package restcat serves them; federation/remote is the client).
//
// Foreign catalogs are declared in the server's configuration (YAML
// federated_catalogs, or FLOE_FEDERATED_CATALOGS as JSON). Secrets are never
// part of the configuration file: a bearer token or an OAuth2 client secret
// is read from the environment variable the entry names. Foreign catalogs
// may also be created at run time (Service, service.go); a secret an
// operator passes then is stored sealed, never in clear.
package federation

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Auth kinds.
const (
	AuthNone   = "none"
	AuthBearer = "bearer"
	AuthOAuth2 = "oauth2"
)

// Bounds of the configuration.
const (
	MaxCatalogs     = 64
	DefaultCacheTTL = 30 * time.Second
	MaxCacheTTL     = time.Hour
)

// Catalog is one foreign catalog.
type Catalog struct {
	// Name is the warehouse name Floe serves it under.
	Name string `yaml:"name" json:"name"`
	// Type is "rest" (the only type yet).
	Type string `yaml:"type" json:"type"`
	// URI is the remote catalog's base URI (without /v1).
	URI string `yaml:"uri" json:"uri"`
	// Warehouse is the remote warehouse, sent to its /v1/config.
	Warehouse string `yaml:"warehouse" json:"warehouse"`
	// Auth is none, bearer or oauth2 (client credentials).
	Auth string `yaml:"auth" json:"auth"`
	// TokenEnv names the environment variable holding the bearer token.
	TokenEnv string `yaml:"token_env" json:"token_env"`
	// ClientID and ClientSecretEnv (the variable holding the secret) are
	// the OAuth2 client; Scope and TokenURL are optional.
	ClientID        string `yaml:"client_id" json:"client_id"`
	ClientSecretEnv string `yaml:"client_secret_env" json:"client_secret_env"`
	Scope           string `yaml:"scope" json:"scope"`
	TokenURL        string `yaml:"token_url" json:"token_url"`
	// CacheTTL is how long remote metadata is reused (default 30 s, at
	// most 1 h; 0 takes the default, a negative value caches nothing).
	CacheTTL time.Duration `yaml:"cache_ttl" json:"cache_ttl"`

	// Token and ClientSecret are read from the environment by Finish.
	Token, ClientSecret string `yaml:"-" json:"-"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,62}$`)

// Finish validates the catalogs, fills defaults and reads their secrets
// with getenv. reserved names the local warehouses a foreign catalog may
// not shadow.
func Finish(cs []Catalog, getenv func(string) string, reserved ...string) error {
	if len(cs) > MaxCatalogs {
		return fmt.Errorf("federated_catalogs: at most %d catalogs", MaxCatalogs)
	}
	seen := map[string]bool{}
	for _, r := range reserved {
		seen[strings.ToLower(r)] = true
	}
	for i := range cs {
		c := &cs[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("federated_catalogs[%d] (%s): %s", i, c.Name, fmt.Sprintf(format, args...))
		}
		if !nameRE.MatchString(c.Name) {
			return bad("name must be a letter then up to 62 letters, digits, _ or -")
		}
		if seen[strings.ToLower(c.Name)] {
			return bad("the name is taken by a warehouse or another foreign catalog")
		}
		seen[strings.ToLower(c.Name)] = true
		if c.Type == "" {
			c.Type = "rest"
		}
		if c.Type != "rest" {
			return bad("type %q is not supported (rest)", c.Type)
		}
		u, err := url.Parse(c.URI)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return bad("uri must be an absolute http(s) URL without credentials")
		}
		switch {
		case c.CacheTTL == 0:
			c.CacheTTL = DefaultCacheTTL
		case c.CacheTTL > MaxCacheTTL:
			return bad("cache_ttl %s is above %s", c.CacheTTL, MaxCacheTTL)
		}
		switch c.Auth {
		case "", AuthNone:
			c.Auth = AuthNone
		case AuthBearer:
			if c.TokenEnv == "" {
				return bad("auth bearer needs token_env (the variable holding the token)")
			}
			if c.Token = getenv(c.TokenEnv); c.Token == "" {
				return bad("the environment variable %s (token_env) is empty", c.TokenEnv)
			}
		case AuthOAuth2:
			if c.ClientID == "" || c.ClientSecretEnv == "" {
				return bad("auth oauth2 needs client_id and client_secret_env (the variable holding the secret)")
			}
			if c.ClientSecret = getenv(c.ClientSecretEnv); c.ClientSecret == "" {
				return bad("the environment variable %s (client_secret_env) is empty", c.ClientSecretEnv)
			}
			if c.TokenURL != "" {
				if t, err := url.Parse(c.TokenURL); err != nil || (t.Scheme != "http" && t.Scheme != "https") || t.Host == "" {
					return bad("token_url must be an absolute http(s) URL")
				}
			}
		default:
			return bad("auth %q is not one of none, bearer, oauth2", c.Auth)
		}
	}
	return nil
}
