// Package federation configures foreign catalogs: remote Iceberg REST
// catalogs (another Floe, Polaris, Lakekeeper, Apache Iceberg's REST
// server, AWS Glue's Iceberg endpoint with SigV4) that Floe serves as
// warehouses of its own, read in place and governed by Floe's grants
// (package restcat serves them; federation/remote is the client).
//
// Foreign catalogs are declared in the server's configuration (YAML
// federated_catalogs, or FLOE_FEDERATED_CATALOGS as JSON). Secrets are never
// part of the configuration file: a bearer token or an OAuth2 client secret
// is read from the environment variable the entry names, and SigV4 takes its
// credentials from the AWS default chain. Foreign catalogs may also be
// created at run time (Service, service.go); a secret an operator passes
// then is stored sealed, never in clear.
package federation

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Auth kinds.
const (
	AuthNone   = "none"
	AuthBearer = "bearer"
	AuthOAuth2 = "oauth2"
	AuthSigV4  = "sigv4"
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
	// Auth is none, bearer, oauth2 (client credentials) or sigv4 (AWS
	// Signature Version 4, for AWS Glue's Iceberg REST endpoint).
	Auth string `yaml:"auth" json:"auth"`
	// TokenEnv names the environment variable holding the bearer token.
	TokenEnv string `yaml:"token_env" json:"token_env"`
	// ClientID and ClientSecretEnv (the variable holding the secret) are
	// the OAuth2 client; Scope and TokenURL are optional.
	ClientID        string `yaml:"client_id" json:"client_id"`
	ClientSecretEnv string `yaml:"client_secret_env" json:"client_secret_env"`
	Scope           string `yaml:"scope" json:"scope"`
	TokenURL        string `yaml:"token_url" json:"token_url"`
	// Region (required), SigningName (default glue), RoleARN and
	// ExternalID configure auth sigv4. No secret is configured: the AWS
	// default credential chain (environment, shared profile, web
	// identity, container or instance role) supplies the credentials,
	// and with RoleARN Floe assumes that role on top of them.
	Region      string `yaml:"region" json:"region"`
	SigningName string `yaml:"signing_name" json:"signing_name"`
	RoleARN     string `yaml:"role_arn" json:"role_arn"`
	ExternalID  string `yaml:"external_id" json:"external_id"`
	// CacheTTL is how long remote metadata is reused (default 30 s, at
	// most 1 h; 0 takes the default, a negative value caches nothing).
	CacheTTL time.Duration `yaml:"cache_ttl" json:"cache_ttl"`

	// Writes turns on forwarding writes (namespaces, tables, commits) to
	// the remote, off by default (every write is refused). Writes use a
	// separate write credential, required with Writes, so that reads
	// never carry what the remote grants the write identity:
	// WriteTokenEnv (auth bearer), WriteClientID and WriteClientSecretEnv
	// (auth oauth2, with the read client's Scope and TokenURL), or
	// WriteRoleARN with an optional WriteExternalID (auth sigv4: the role
	// assumed for writes, on top of the same AWS default chain; the
	// external id defaults to ExternalID). Auth none has no credential to
	// separate, so it cannot write.
	Writes               bool   `yaml:"writes" json:"writes"`
	WriteTokenEnv        string `yaml:"write_token_env" json:"write_token_env"`
	WriteClientID        string `yaml:"write_client_id" json:"write_client_id"`
	WriteClientSecretEnv string `yaml:"write_client_secret_env" json:"write_client_secret_env"`
	WriteRoleARN         string `yaml:"write_role_arn" json:"write_role_arn"`
	WriteExternalID      string `yaml:"write_external_id" json:"write_external_id"`

	// Token and ClientSecret are read from the environment by Finish, as
	// are WriteToken and WriteClientSecret.
	Token, ClientSecret           string `yaml:"-" json:"-"`
	WriteToken, WriteClientSecret string `yaml:"-" json:"-"`
}

var (
	nameRE        = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,62}$`)
	regionRE      = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	signingNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	roleARNRE     = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}$`)
	externalIDRE  = regexp.MustCompile(`^[\w+=,.@:/-]+$`)
)

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
		case AuthSigV4:
			if !regionRE.MatchString(c.Region) {
				return bad("auth sigv4 needs region, an AWS region such as us-east-1 (got %q)", c.Region)
			}
			if c.SigningName == "" {
				c.SigningName = "glue"
			}
			if !signingNameRE.MatchString(c.SigningName) {
				return bad("signing_name %q is not an AWS service name such as glue", c.SigningName)
			}
			if c.RoleARN != "" && !roleARNRE.MatchString(c.RoleARN) {
				return bad("role_arn %q is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)", c.RoleARN)
			}
			if c.ExternalID != "" {
				if c.RoleARN == "" {
					return bad("external_id needs role_arn")
				}
				if len(c.ExternalID) < 2 || len(c.ExternalID) > 1224 || !externalIDRE.MatchString(c.ExternalID) {
					return bad("external_id must be 2 to 1224 characters of letters, digits and +=,.@:/-_")
				}
			}
		default:
			return bad("auth %q is not one of none, bearer, oauth2, sigv4", c.Auth)
		}
		if err := finishWrites(c, getenv); err != nil {
			return bad("%s", err)
		}
	}
	return nil
}

// finishWrites validates the write settings of c and reads its write
// secret: a separate write credential is required with writes, refused
// without, and may not be the read credential.
func finishWrites(c *Catalog, getenv func(string) string) error {
	set := map[string]string{"write_token_env": c.WriteTokenEnv, "write_client_id": c.WriteClientID,
		"write_client_secret_env": c.WriteClientSecretEnv, "write_role_arn": c.WriteRoleARN, "write_external_id": c.WriteExternalID}
	if !c.Writes {
		for _, k := range []string{"write_token_env", "write_client_id", "write_client_secret_env", "write_role_arn", "write_external_id"} {
			if set[k] != "" {
				return fmt.Errorf("%s is set but writes is not: set writes: true to forward writes, or remove it", k)
			}
		}
		return nil
	}
	allowed := map[string][]string{AuthBearer: {"write_token_env"}, AuthOAuth2: {"write_client_id", "write_client_secret_env"},
		AuthSigV4: {"write_role_arn", "write_external_id"}}[c.Auth]
	for k, v := range set {
		if v != "" && !slices.Contains(allowed, k) {
			return fmt.Errorf("%s does not apply to auth %s", k, c.Auth)
		}
	}
	switch c.Auth {
	case AuthBearer:
		if c.WriteTokenEnv == "" {
			return fmt.Errorf("writes need a separate write credential: auth bearer takes write_token_env (the variable holding the write token)")
		}
		if c.WriteToken = getenv(c.WriteTokenEnv); c.WriteToken == "" {
			return fmt.Errorf("the environment variable %s (write_token_env) is empty", c.WriteTokenEnv)
		}
		if c.WriteToken == c.Token {
			return fmt.Errorf("the write token is the read token: writes need a credential of their own (least privilege)")
		}
	case AuthOAuth2:
		if c.WriteClientID == "" || c.WriteClientSecretEnv == "" {
			return fmt.Errorf("writes need a separate write credential: auth oauth2 takes write_client_id and write_client_secret_env")
		}
		if c.WriteClientID == c.ClientID {
			return fmt.Errorf("write_client_id is the read client_id: writes need a client of their own (least privilege)")
		}
		if c.WriteClientSecret = getenv(c.WriteClientSecretEnv); c.WriteClientSecret == "" {
			return fmt.Errorf("the environment variable %s (write_client_secret_env) is empty", c.WriteClientSecretEnv)
		}
	case AuthSigV4:
		if c.WriteRoleARN == "" {
			return fmt.Errorf("writes need a separate write credential: auth sigv4 takes write_role_arn (the role assumed for writes)")
		}
		if !roleARNRE.MatchString(c.WriteRoleARN) {
			return fmt.Errorf("write_role_arn %q is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)", c.WriteRoleARN)
		}
		if c.WriteRoleARN == c.RoleARN {
			return fmt.Errorf("write_role_arn is the read role_arn: writes need a role of their own (least privilege)")
		}
		if c.WriteExternalID == "" {
			c.WriteExternalID = c.ExternalID
		}
		if c.WriteExternalID != "" && (len(c.WriteExternalID) < 2 || len(c.WriteExternalID) > 1224 || !externalIDRE.MatchString(c.WriteExternalID)) {
			return fmt.Errorf("write_external_id must be 2 to 1224 characters of letters, digits and +=,.@:/-_")
		}
	default:
		return fmt.Errorf("writes need a separate write credential, and auth %s has none: use bearer, oauth2 or sigv4", c.Auth)
	}
	return nil
}
