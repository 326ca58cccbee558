package federation

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
)

// SealPurpose names the secrets of foreign catalogs to the store's secret
// sealer (internal/keywrap); it is bound into each sealed secret with the
// catalog's id.
const SealPurpose = "federation.catalog-secret"

// WriteSealPurpose names the write secrets of foreign catalogs (the write
// identity's bearer token or client secret) to the store's secret sealer,
// bound with the catalog's id.
const WriteSealPurpose = "federation.catalog-write-secret"

// MaxSecret bounds a secret passed to Create (a bearer token or an OAuth2
// client secret), in bytes.
const MaxSecret = 8 << 10

// Sources of a foreign catalog.
const (
	// SourceConfig is a catalog of the server's configuration.
	SourceConfig = "config"
	// SourceAPI is a catalog created at run time (management API, CLI).
	SourceAPI = "api"
)

// Record is a foreign catalog created at run time, as stored. It never
// holds a secret in clear: SealedSecret is sealed with the store's secret
// sealer, or empty when the catalog has no secret or names the
// environment variable holding it (SecretEnv).
type Record struct {
	// ID is the catalog's stable identifier (bound into the sealed secret).
	ID string
	// Name is the warehouse name Floe serves it under (unique without
	// regard to case, with the configured catalogs and local warehouses).
	Name string
	// Type is "rest".
	Type string
	// URI is the remote catalog's base URI (without /v1).
	URI string
	// Warehouse is the remote warehouse, sent to its /v1/config.
	Warehouse string
	// Auth is none, bearer, oauth2 or sigv4.
	Auth string
	// ClientID, Scope and TokenURL configure OAuth2 client credentials.
	ClientID, Scope, TokenURL string
	// Region, SigningName, RoleARN and ExternalID configure auth sigv4
	// (no secret: the AWS default chain of each node).
	Region, SigningName, RoleARN, ExternalID string
	// CacheTTL is how long remote metadata is reused (negative: not at all).
	CacheTTL time.Duration
	// SecretEnv names the environment variable holding the bearer token or
	// client secret on every node ("" when the secret is sealed or absent).
	SecretEnv string
	// SealedSecret is the sealed bearer token or client secret (empty when
	// none is stored).
	SealedSecret []byte
	// Writes turns on forwarding writes with the write identity:
	// WriteClientID (oauth2), WriteRoleARN and WriteExternalID (sigv4),
	// and the write secret, sealed (SealedWriteSecret, purpose
	// WriteSealPurpose) or named (WriteSecretEnv).
	Writes                        bool
	WriteClientID                 string
	WriteRoleARN, WriteExternalID string
	WriteSecretEnv                string
	SealedWriteSecret             []byte
	// CreatedBy is the principal that created the catalog.
	CreatedBy string
	// CreatedAt is when it was created.
	CreatedAt time.Time
}

// Store persists the foreign catalogs created at run time
// (*sqlstore.Store implements it). Names are compared without regard to
// case. Errors are *floe.Error values of the kinds documented per method.
type Store interface {
	// CreateForeignCatalog adds a catalog: AlreadyExists (entity "foreign
	// catalog") if the name is taken, Unprocessable when max catalogs are
	// stored already.
	CreateForeignCatalog(ctx context.Context, r Record, max int) error
	// ForeignCatalog returns a catalog by name: NotFound (entity "foreign
	// catalog").
	ForeignCatalog(ctx context.Context, name string) (Record, error)
	// ListForeignCatalogs returns every stored catalog ordered by name.
	ListForeignCatalogs(ctx context.Context) ([]Record, error)
	// DropForeignCatalog removes a catalog by name: NotFound (entity
	// "foreign catalog").
	DropForeignCatalog(ctx context.Context, name string) error
}

// Sealer seals secrets at rest (*keywrap.Sealer).
type Sealer interface {
	// Seal encrypts secret for (purpose, id).
	Seal(ctx context.Context, purpose, id string, secret []byte) ([]byte, error)
	// Open decrypts a blob sealed for (purpose, id).
	Open(ctx context.Context, purpose, id string, blob []byte) ([]byte, error)
}

// ServiceOptions configures a Service. Store and Sealer are required.
type ServiceOptions struct {
	Store  Store
	Sealer Sealer
	// Configured are the catalogs of the server's configuration (already
	// finished by Finish): their names are taken and they count towards
	// MaxCatalogs.
	Configured []Catalog
	// Reserved are the local warehouses' names, which no foreign catalog
	// may take.
	Reserved []string
	// Getenv reads the variables that catalogs' SecretEnv name (nil:
	// none is set).
	Getenv func(string) string
	// Changed, when set, is called after a catalog is created or dropped
	// (the server reloads what it serves).
	Changed func(ctx context.Context)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// Service manages the foreign catalogs created at run time: it validates
// them as Finish validates configured ones, seals the secrets operators
// pass, bounds their number and lets only administrators create, see and
// drop them. It is safe for concurrent use.
type Service struct {
	o ServiceOptions
}

// NewService returns a Service.
func NewService(o ServiceOptions) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{o: o}
}

// Spec is what Create creates. Secret and SecretEnv are exclusive: the
// bearer token (auth bearer) or client secret (auth oauth2) itself, sealed
// at rest, or the name of the environment variable holding it on every
// node.
type Spec struct {
	Name, Type, URI, Warehouse, Auth         string
	ClientID, Scope, TokenURL                string
	Region, SigningName, RoleARN, ExternalID string
	// CacheTTL is the metadata cache TTL (0: DefaultCacheTTL; negative:
	// no cache; at most MaxCacheTTL).
	CacheTTL  time.Duration
	Secret    string
	SecretEnv string
	// Writes turns on forwarding writes; the write identity is
	// WriteClientID with WriteSecret or WriteSecretEnv (oauth2),
	// WriteSecret or WriteSecretEnv (bearer), or WriteRoleARN and
	// WriteExternalID (sigv4). WriteSecret is sealed at rest.
	Writes                        bool
	WriteClientID                 string
	WriteRoleARN, WriteExternalID string
	WriteSecret, WriteSecretEnv   string
}

// Entry is a foreign catalog as the management API shows it: configured
// or created at run time, never with its secret.
type Entry struct {
	Name, Type, URI, Warehouse, Auth         string
	ClientID, Scope, TokenURL                string
	Region, SigningName, RoleARN, ExternalID string
	CacheTTL                                 time.Duration
	// Writes reports that writes are forwarded; the write identity is
	// WriteClientID, WriteRoleARN (and WriteExternalID), and its secret is
	// sealed (WriteSecretSet) or named (WriteSecretEnv).
	Writes                        bool
	WriteClientID                 string
	WriteRoleARN, WriteExternalID string
	WriteSecretSet                bool
	WriteSecretEnv                string
	// Source is SourceConfig or SourceAPI.
	Source string
	// SecretSet reports that a secret is stored (sealed); SecretEnv names
	// the variable holding it otherwise.
	SecretSet bool
	SecretEnv string
	// CreatedBy and CreatedAt are set for catalogs created at run time.
	CreatedBy string
	CreatedAt time.Time
}

// admin refuses a non-administrator, naming what needed one.
func admin(sub authz.Subject, what string) error {
	if sub.Admin {
		return nil
	}
	return floe.E(floe.Forbidden, "privilege", "%s is not an administrator: %s requires an admin principal (foreign catalogs are server-wide)", sub, what)
}

var envRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// secretVar and writeSecretVar are the names under which Create hands
// passed secrets to Finish; they are no valid environment variable names.
const (
	secretVar      = "\x00passed secret"
	writeSecretVar = "\x00passed write secret"
)

// Create validates spec as Finish validates a configured catalog, seals
// its secret and stores it. Only an administrator may create a catalog.
func (s *Service) Create(ctx context.Context, sub authz.Subject, spec Spec) (Entry, error) {
	if err := admin(sub, "creating a foreign catalog"); err != nil {
		return Entry{}, err
	}
	c, err := s.validate(spec)
	if err != nil {
		return Entry{}, err
	}
	r := Record{ID: newID(), Name: c.Name, Type: c.Type, URI: c.URI, Warehouse: c.Warehouse, Auth: c.Auth,
		ClientID: c.ClientID, Scope: c.Scope, TokenURL: c.TokenURL,
		Region: c.Region, SigningName: c.SigningName, RoleARN: c.RoleARN, ExternalID: c.ExternalID,
		CacheTTL: c.CacheTTL, SecretEnv: spec.SecretEnv, SealedSecret: []byte{},
		Writes: c.Writes, WriteClientID: c.WriteClientID, WriteRoleARN: c.WriteRoleARN, WriteExternalID: c.WriteExternalID,
		WriteSecretEnv: spec.WriteSecretEnv, SealedWriteSecret: []byte{},
		CreatedBy: sub.Principal, CreatedAt: s.o.Now().UTC()}
	for _, sec := range []struct {
		secret, purpose string
		out             *[]byte
	}{{spec.Secret, SealPurpose, &r.SealedSecret}, {spec.WriteSecret, WriteSealPurpose, &r.SealedWriteSecret}} {
		if sec.secret == "" {
			continue
		}
		if s.o.Sealer == nil {
			return Entry{}, floe.E(floe.Unsupported, "foreign catalog", "this server cannot seal secrets: pass the secret's environment variable instead")
		}
		if *sec.out, err = s.o.Sealer.Seal(ctx, sec.purpose, r.ID, []byte(sec.secret)); err != nil {
			return Entry{}, fmt.Errorf("seal a secret of foreign catalog %s: %w", r.Name, err)
		}
	}
	if err := s.o.Store.CreateForeignCatalog(ctx, r, MaxCatalogs-len(s.o.Configured)); err != nil {
		if floe.KindOf(err) == floe.Unprocessable {
			return Entry{}, floe.E(floe.Unprocessable, "foreign catalog",
				"limit reached: at most %d foreign catalogs (%d configured, %d created at run time)", MaxCatalogs, len(s.o.Configured), MaxCatalogs-len(s.o.Configured))
		}
		return Entry{}, err
	}
	s.o.Logger.InfoContext(ctx, "foreign catalog created", "name", r.Name, "uri", r.URI, "auth", r.Auth, "writes", r.Writes, "by", r.CreatedBy)
	s.changed(ctx)
	return recordEntry(r), nil
}

func (s *Service) changed(ctx context.Context) {
	if s.o.Changed != nil {
		s.o.Changed(context.WithoutCancel(ctx))
	}
}

// validate checks spec with Finish (names, URIs, auth, TTL) and the rules
// of run-time catalogs (where the secret comes from).
func (s *Service) validate(spec Spec) (Catalog, error) {
	bad := func(format string, args ...any) (Catalog, error) {
		return Catalog{}, floe.E(floe.Invalid, "foreign catalog", format, args...)
	}
	for _, sec := range []struct{ what, secret, env string }{{"secret", spec.Secret, spec.SecretEnv}, {"write secret", spec.WriteSecret, spec.WriteSecretEnv}} {
		if sec.secret != "" && sec.env != "" {
			return bad("pass the %s or the name of its environment variable, not both", sec.what)
		}
		if len(sec.secret) > MaxSecret {
			return bad("the %s is longer than %d bytes", sec.what, MaxSecret)
		}
		if sec.secret != "" && strings.TrimSpace(sec.secret) != sec.secret {
			return bad("the %s begins or ends with white space", sec.what)
		}
		if sec.env != "" && !envRE.MatchString(sec.env) {
			return bad("%s environment variable %q is not a valid name (letters, digits and _, not starting with a digit)", sec.what, sec.env)
		}
	}
	hasSecret, hasWriteSecret := spec.Secret != "" || spec.SecretEnv != "", spec.WriteSecret != "" || spec.WriteSecretEnv != ""
	what := map[string]string{AuthBearer: "token", AuthOAuth2: "client secret"}[spec.Auth]
	switch spec.Auth {
	case "", AuthNone, AuthSigV4:
		if hasSecret || hasWriteSecret {
			return bad("auth %s takes no secret", cmp.Or(spec.Auth, AuthNone))
		}
	case AuthBearer, AuthOAuth2:
		if !hasSecret {
			return bad("auth %s needs its %s: passed in the request (sealed at rest) or as the name of the environment variable holding it on every node", spec.Auth, what)
		}
		if spec.Writes && !hasWriteSecret {
			return bad("writes need a separate write credential: auth %s needs the write identity's %s, passed in the request (sealed at rest) or as the name of the environment variable holding it on every node", spec.Auth, what)
		}
		if !spec.Writes && hasWriteSecret {
			return bad("a write %s is set but writes is not", what)
		}
	default:
		return bad("auth %q is not one of none, bearer, oauth2, sigv4", spec.Auth)
	}
	c := Catalog{Name: spec.Name, Type: spec.Type, URI: spec.URI, Warehouse: spec.Warehouse, Auth: spec.Auth,
		ClientID: spec.ClientID, Scope: spec.Scope, TokenURL: spec.TokenURL, CacheTTL: spec.CacheTTL,
		Region: spec.Region, SigningName: spec.SigningName, RoleARN: spec.RoleARN, ExternalID: spec.ExternalID,
		Writes: spec.Writes, WriteClientID: spec.WriteClientID, WriteRoleARN: spec.WriteRoleARN, WriteExternalID: spec.WriteExternalID}
	s.setSecretVar(&c, cmp.Or(spec.SecretEnv, secretVar))
	if hasWriteSecret {
		setWriteSecretVar(&c, cmp.Or(spec.WriteSecretEnv, writeSecretVar))
	}
	getenv := func(k string) string {
		switch k {
		case secretVar:
			return spec.Secret
		case writeSecretVar:
			return spec.WriteSecret
		}
		return s.o.Getenv(k)
	}
	reserved := slices.Clone(s.o.Reserved)
	for _, cc := range s.o.Configured {
		reserved = append(reserved, cc.Name)
	}
	cs := []Catalog{c}
	if err := Finish(cs, getenv, reserved...); err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "): "); i >= 0 && strings.HasPrefix(msg, "federated_catalogs[0] (") {
			msg = msg[i+3:]
		}
		msg = strings.ReplaceAll(msg, writeSecretVar, "(passed write secret)")
		msg = strings.ReplaceAll(msg, secretVar, "(passed secret)")
		return Catalog{}, floe.Wrap(floe.Invalid, nil, "foreign catalog %s: %s", spec.Name, msg)
	}
	c = cs[0]
	c.Token, c.ClientSecret, c.TokenEnv, c.ClientSecretEnv = "", "", "", ""
	c.WriteToken, c.WriteClientSecret, c.WriteTokenEnv, c.WriteClientSecretEnv = "", "", "", ""
	return c, nil
}

// setWriteSecretVar names v as the variable holding c's write secret.
func setWriteSecretVar(c *Catalog, v string) {
	switch c.Auth {
	case AuthBearer:
		c.WriteTokenEnv = v
	case AuthOAuth2:
		c.WriteClientSecretEnv = v
	}
}

// setSecretVar names v as the variable holding c's secret.
func (s *Service) setSecretVar(c *Catalog, v string) {
	switch c.Auth {
	case AuthBearer:
		c.TokenEnv = v
	case AuthOAuth2:
		c.ClientSecretEnv = v
	}
}

// Get returns a catalog (configured or created at run time) by name, to an
// administrator.
func (s *Service) Get(ctx context.Context, sub authz.Subject, name string) (Entry, error) {
	if err := admin(sub, "showing a foreign catalog"); err != nil {
		return Entry{}, err
	}
	for _, c := range s.o.Configured {
		if strings.EqualFold(c.Name, name) {
			return configEntry(c), nil
		}
	}
	r, err := s.o.Store.ForeignCatalog(ctx, name)
	if err != nil {
		return Entry{}, err
	}
	return recordEntry(r), nil
}

// List returns every foreign catalog, configured ones first then those
// created at run time, each ordered by name, to an administrator.
func (s *Service) List(ctx context.Context, sub authz.Subject) ([]Entry, error) {
	if err := admin(sub, "listing foreign catalogs"); err != nil {
		return nil, err
	}
	rs, err := s.o.Store.ListForeignCatalogs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(s.o.Configured)+len(rs))
	for _, c := range s.o.Configured {
		out = append(out, configEntry(c))
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	for _, r := range rs {
		out = append(out, recordEntry(r))
	}
	return out, nil
}

// Drop drops a catalog created at run time; every node stops serving it
// (see Load). A configured catalog is refused: it is removed from the
// configuration.
func (s *Service) Drop(ctx context.Context, sub authz.Subject, name string) error {
	if err := admin(sub, "dropping a foreign catalog"); err != nil {
		return err
	}
	for _, c := range s.o.Configured {
		if strings.EqualFold(c.Name, name) {
			return floe.E(floe.Unprocessable, "foreign catalog", "foreign catalog %s is in the server's configuration: remove it there and restart", c.Name)
		}
	}
	if err := s.o.Store.DropForeignCatalog(ctx, name); err != nil {
		return err
	}
	s.o.Logger.InfoContext(ctx, "foreign catalog dropped", "name", name, "by", sub.Principal)
	s.changed(ctx)
	return nil
}

// Loaded is a stored catalog ready to serve: its Catalog holds the secret
// in clear (unsealed, or read from its variable), for the client only.
type Loaded struct {
	ID      string
	Catalog Catalog
}

// Load returns the catalogs created at run time with their secrets, for the
// server to serve. A catalog whose secret cannot be opened or read is left
// out and reported in the joined error (naming it, never the secret); the
// others are returned.
func (s *Service) Load(ctx context.Context) ([]Loaded, error) {
	rs, err := s.o.Store.ListForeignCatalogs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Loaded, 0, len(rs))
	var errs []error
	for _, r := range rs {
		c := Catalog{Name: r.Name, Type: r.Type, URI: r.URI, Warehouse: r.Warehouse, Auth: r.Auth, ClientID: r.ClientID,
			Scope: r.Scope, TokenURL: r.TokenURL, CacheTTL: r.CacheTTL,
			Region: r.Region, SigningName: r.SigningName, RoleARN: r.RoleARN, ExternalID: r.ExternalID,
			Writes: r.Writes, WriteClientID: r.WriteClientID, WriteRoleARN: r.WriteRoleARN, WriteExternalID: r.WriteExternalID}
		secret, err := s.openSecret(ctx, r, "secret", SealPurpose, r.SealedSecret, r.SecretEnv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		writeSecret, err := s.openSecret(ctx, r, "write secret", WriteSealPurpose, r.SealedWriteSecret, r.WriteSecretEnv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch c.Auth {
		case AuthBearer:
			c.Token, c.WriteToken = secret, writeSecret
		case AuthOAuth2:
			c.ClientSecret, c.WriteClientSecret = secret, writeSecret
		}
		out = append(out, Loaded{ID: r.ID, Catalog: c})
	}
	return out, errors.Join(errs...)
}

// openSecret returns a stored catalog's secret: unsealed, read from its
// variable, or "" when it has none. Errors name the catalog and the
// variable, never the secret.
func (s *Service) openSecret(ctx context.Context, r Record, what, purpose string, sealed []byte, env string) (string, error) {
	switch {
	case len(sealed) > 0:
		if s.o.Sealer == nil {
			return "", fmt.Errorf("foreign catalog %s: no sealer to open its %s", r.Name, what)
		}
		b, err := s.o.Sealer.Open(ctx, purpose, r.ID, sealed)
		if err != nil {
			return "", fmt.Errorf("foreign catalog %s: open its %s: %w", r.Name, what, err)
		}
		return string(b), nil
	case env != "":
		v := s.o.Getenv(env)
		if v == "" {
			return "", fmt.Errorf("foreign catalog %s: the environment variable %s (its %s) is empty on this node", r.Name, env, what)
		}
		return v, nil
	}
	return "", nil
}

func configEntry(c Catalog) Entry {
	env, wenv := c.ClientSecretEnv, c.WriteClientSecretEnv
	if c.Auth == AuthBearer {
		env, wenv = c.TokenEnv, c.WriteTokenEnv
	}
	return Entry{Name: c.Name, Type: c.Type, URI: c.URI, Warehouse: c.Warehouse, Auth: c.Auth, ClientID: c.ClientID,
		Scope: c.Scope, TokenURL: c.TokenURL, Region: c.Region, SigningName: c.SigningName, RoleARN: c.RoleARN,
		ExternalID: c.ExternalID, CacheTTL: c.CacheTTL, Source: SourceConfig, SecretEnv: env,
		Writes: c.Writes, WriteClientID: c.WriteClientID, WriteRoleARN: c.WriteRoleARN, WriteExternalID: c.WriteExternalID,
		WriteSecretEnv: wenv}
}

func recordEntry(r Record) Entry {
	return Entry{Name: r.Name, Type: r.Type, URI: r.URI, Warehouse: r.Warehouse, Auth: r.Auth, ClientID: r.ClientID,
		Scope: r.Scope, TokenURL: r.TokenURL, Region: r.Region, SigningName: r.SigningName, RoleARN: r.RoleARN,
		ExternalID: r.ExternalID, CacheTTL: r.CacheTTL, Source: SourceAPI, SecretSet: len(r.SealedSecret) > 0,
		SecretEnv: r.SecretEnv, Writes: r.Writes, WriteClientID: r.WriteClientID, WriteRoleARN: r.WriteRoleARN,
		WriteExternalID: r.WriteExternalID, WriteSecretSet: len(r.SealedWriteSecret) > 0, WriteSecretEnv: r.WriteSecretEnv,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "fc_" + hex.EncodeToString(b)
}
