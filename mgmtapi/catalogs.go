package mgmtapi

import (
	"context"
	"net/http"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/federation"
)

// Federation manages foreign catalogs (*federation.Service). Each method
// checks the caller's rights itself (administrators only).
type Federation interface {
	Create(ctx context.Context, sub authz.Subject, spec federation.Spec) (federation.Entry, error)
	Get(ctx context.Context, sub authz.Subject, name string) (federation.Entry, error)
	List(ctx context.Context, sub authz.Subject) ([]federation.Entry, error)
	Drop(ctx context.Context, sub authz.Subject, name string) error
}

// Audit actions of the foreign catalog operations.
const (
	ActionCatalogCreate = "federation.catalog.create"
	ActionCatalogDrop   = "federation.catalog.drop"
)

// ForeignCatalog is the wire form of a foreign catalog (never with its
// secret).
type ForeignCatalog struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	URI       string `json:"uri"`
	Warehouse string `json:"warehouse"`
	Auth      string `json:"auth"`
	ClientID  string `json:"client_id,omitempty"`
	Scope     string `json:"scope,omitempty"`
	TokenURL  string `json:"token_url,omitempty"`
	// Region, SigningName, RoleARN and ExternalID configure auth sigv4.
	Region      string `json:"region,omitempty"`
	SigningName string `json:"signing_name,omitempty"`
	RoleARN     string `json:"role_arn,omitempty"`
	ExternalID  string `json:"external_id,omitempty"`
	// CacheTTLSeconds is the metadata cache TTL (negative: no cache).
	CacheTTLSeconds float64 `json:"cache_ttl_seconds"`
	// Writes reports that writes are forwarded to the remote with the
	// write identity: WriteClientID (oauth2) or WriteRoleARN (sigv4), its
	// secret "set", "env" (WriteSecretEnv) or "none" (WriteSecret).
	Writes          bool   `json:"writes"`
	WriteClientID   string `json:"write_client_id,omitempty"`
	WriteRoleARN    string `json:"write_role_arn,omitempty"`
	WriteExternalID string `json:"write_external_id,omitempty"`
	WriteSecret     string `json:"write_secret,omitempty"`
	WriteSecretEnv  string `json:"write_secret_env,omitempty"`
	// Source is "config" (the server's configuration) or "api" (created
	// at run time).
	Source string `json:"source"`
	// Secret is "set" when a secret is stored sealed, "env" when
	// SecretEnv names the variable holding it, "none" otherwise.
	Secret    string     `json:"secret"`
	SecretEnv string     `json:"secret_env,omitempty"`
	CreatedBy string     `json:"created_by,omitempty"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
}

// ForeignCatalogList is the answer of GET /catalogs.
type ForeignCatalogList struct {
	Catalogs []ForeignCatalog `json:"catalogs"`
}

// ForeignCatalogRequest is the body of POST /catalogs. The secret (a
// bearer token for auth bearer, the client secret for auth oauth2) is
// passed either in clear (ClientSecret or Token: sealed at rest, never
// returned or logged) or as the name of the environment variable holding
// it on every node (ClientSecretEnv or TokenEnv).
type ForeignCatalogRequest struct {
	Name            string `json:"name"`
	Type            string `json:"type,omitempty"`
	URI             string `json:"uri"`
	Warehouse       string `json:"warehouse,omitempty"`
	Auth            string `json:"auth,omitempty"`
	ClientID        string `json:"client_id,omitempty"`
	ClientSecret    string `json:"client_secret,omitempty"`
	ClientSecretEnv string `json:"client_secret_env,omitempty"`
	Token           string `json:"token,omitempty"`
	TokenEnv        string `json:"token_env,omitempty"`
	Scope           string `json:"scope,omitempty"`
	TokenURL        string `json:"token_url,omitempty"`
	// Region (required), SigningName (default glue), RoleARN and
	// ExternalID configure auth sigv4, which takes no secret.
	Region      string `json:"region,omitempty"`
	SigningName string `json:"signing_name,omitempty"`
	RoleARN     string `json:"role_arn,omitempty"`
	ExternalID  string `json:"external_id,omitempty"`
	// CacheTTLSeconds is the metadata cache TTL (absent or 0: 30 s;
	// negative: no cache; at most 3600).
	CacheTTLSeconds float64 `json:"cache_ttl_seconds,omitempty"`
	// Writes turns on forwarding writes, with a separate write identity:
	// WriteClientID and WriteClientSecret or WriteClientSecretEnv
	// (oauth2), WriteToken or WriteTokenEnv (bearer), WriteRoleARN and
	// WriteExternalID (sigv4). Write secrets are sealed like the others.
	Writes               bool   `json:"writes,omitempty"`
	WriteClientID        string `json:"write_client_id,omitempty"`
	WriteClientSecret    string `json:"write_client_secret,omitempty"`
	WriteClientSecretEnv string `json:"write_client_secret_env,omitempty"`
	WriteToken           string `json:"write_token,omitempty"`
	WriteTokenEnv        string `json:"write_token_env,omitempty"`
	WriteRoleARN         string `json:"write_role_arn,omitempty"`
	WriteExternalID      string `json:"write_external_id,omitempty"`
}

// catalogRoutes are the foreign catalog operations.
func (h *Handler) catalogRoutes() []route {
	const p = "/api/v1"
	return []route{
		{"GET", p + "/catalogs", "", h.withFederation(h.listCatalogs)},
		{"POST", p + "/catalogs", ActionCatalogCreate, h.withFederation(h.createCatalog)},
		{"GET", p + "/catalogs/{name}", "", h.withFederation(h.getCatalog)},
		{"DELETE", p + "/catalogs/{name}", ActionCatalogDrop, h.withFederation(h.dropCatalog)},
	}
}

// withFederation adapts a federation operation to a route: it answers
// Unsupported when the server has no federation service.
func (h *Handler) withFederation(f func(c *call, s Federation) error) func(c *call) error {
	return func(c *call) error {
		if h.opts.Federation == nil {
			return floe.E(floe.Unsupported, "", "foreign catalogs are not managed on this server")
		}
		return f(c, h.opts.Federation)
	}
}

func catalogJSON(e federation.Entry) ForeignCatalog {
	out := ForeignCatalog{Name: e.Name, Type: e.Type, URI: e.URI, Warehouse: e.Warehouse, Auth: e.Auth, ClientID: e.ClientID,
		Scope: e.Scope, TokenURL: e.TokenURL, Region: e.Region, SigningName: e.SigningName, RoleARN: e.RoleARN,
		ExternalID: e.ExternalID, CacheTTLSeconds: e.CacheTTL.Seconds(), Source: e.Source, Secret: secretState(e.SecretSet, e.SecretEnv),
		SecretEnv: e.SecretEnv, Writes: e.Writes, WriteClientID: e.WriteClientID, WriteRoleARN: e.WriteRoleARN,
		WriteExternalID: e.WriteExternalID, WriteSecretEnv: e.WriteSecretEnv, CreatedBy: e.CreatedBy, CreatedAt: timePtr(e.CreatedAt)}
	if e.Writes {
		out.WriteSecret = secretState(e.WriteSecretSet, e.WriteSecretEnv)
	}
	return out
}

// secretState says where a secret is: "set" (sealed), "env" or "none".
func secretState(set bool, env string) string {
	switch {
	case set:
		return "set"
	case env != "":
		return "env"
	}
	return "none"
}

func (h *Handler) listCatalogs(c *call, s Federation) error {
	es, err := s.List(c.ctx, c.sub)
	if err != nil {
		return err
	}
	out := ForeignCatalogList{Catalogs: []ForeignCatalog{}}
	for _, e := range es {
		out.Catalogs = append(out.Catalogs, catalogJSON(e))
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) createCatalog(c *call, s Federation) error {
	var req ForeignCatalogRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	c.resource = "catalog:" + req.Name
	c.note("catalog", req.Name, "uri", req.URI, "warehouse", req.Warehouse, "auth", req.Auth)
	if req.Writes {
		c.note("writes", true)
	}
	spec := federation.Spec{Name: req.Name, Type: req.Type, URI: req.URI, Warehouse: req.Warehouse, Auth: req.Auth,
		ClientID: req.ClientID, Scope: req.Scope, TokenURL: req.TokenURL,
		Region: req.Region, SigningName: req.SigningName, RoleARN: req.RoleARN, ExternalID: req.ExternalID,
		CacheTTL: time.Duration(req.CacheTTLSeconds * float64(time.Second)),
		Writes:   req.Writes, WriteClientID: req.WriteClientID, WriteRoleARN: req.WriteRoleARN, WriteExternalID: req.WriteExternalID}
	var err error
	if spec.Secret, spec.SecretEnv, err = pickSecret(req.Auth, "", req.ClientSecret, req.ClientSecretEnv, req.Token, req.TokenEnv); err != nil {
		return err
	}
	if spec.WriteSecret, spec.WriteSecretEnv, err = pickSecret(req.Auth, "write ", req.WriteClientSecret, req.WriteClientSecretEnv, req.WriteToken, req.WriteTokenEnv); err != nil {
		return err
	}
	if spec.Secret != "" {
		c.note("secret", "passed (sealed at rest)")
	} else if spec.SecretEnv != "" {
		c.note("secret_env", spec.SecretEnv)
	}
	if spec.WriteSecret != "" {
		c.note("write_secret", "passed (sealed at rest)")
	} else if spec.WriteSecretEnv != "" {
		c.note("write_secret_env", spec.WriteSecretEnv)
	}
	e, err := s.Create(c.ctx, c.sub, spec)
	if err != nil {
		return err
	}
	return reply(c, http.StatusCreated, catalogJSON(e))
}

// pickSecret returns the secret (or its variable) of a catalog request: a
// client secret for auth oauth2, a token for auth bearer; what names the
// identity ("" or "write ") in errors.
func pickSecret(auth, what, clientSecret, clientSecretEnv, token, tokenEnv string) (secret, env string, err error) {
	switch {
	case (clientSecret != "" || clientSecretEnv != "") && (token != "" || tokenEnv != ""):
		return "", "", floe.E(floe.Invalid, "foreign catalog", "pass a %sclient secret (auth oauth2) or a %stoken (auth bearer), not both", what, what)
	case token != "" || tokenEnv != "":
		if auth != federation.AuthBearer {
			return "", "", floe.E(floe.Invalid, "foreign catalog", "a %stoken is for auth bearer (auth is %q)", what, auth)
		}
		return token, tokenEnv, nil
	case clientSecret != "" || clientSecretEnv != "":
		if auth != federation.AuthOAuth2 {
			return "", "", floe.E(floe.Invalid, "foreign catalog", "a %sclient secret is for auth oauth2 (auth is %q)", what, auth)
		}
		return clientSecret, clientSecretEnv, nil
	}
	return "", "", nil
}

func (h *Handler) getCatalog(c *call, s Federation) error {
	e, err := s.Get(c.ctx, c.sub, c.r.PathValue("name"))
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, catalogJSON(e))
}

func (h *Handler) dropCatalog(c *call, s Federation) error {
	name := c.r.PathValue("name")
	c.resource = "catalog:" + name
	c.note("catalog", name)
	if err := s.Drop(c.ctx, c.sub, name); err != nil {
		return err
	}
	return noContent(c)
}
