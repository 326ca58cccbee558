package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/floe-lake/floe"
)

// ScopeCatalog is the default scope: the catalog, limited by grants.
const ScopeCatalog = "catalog"

// Options configures a Service. Zero values mean defaults.
type Options struct {
	// Issuer is the iss claim of issued tokens (default "floe").
	Issuer string
	// TokenTTL is the lifetime of access tokens (default 15 minutes).
	TokenTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives structured logs.
	Logger *slog.Logger
}

// Claims is what a verified access token says about its bearer.
type Claims struct {
	PrincipalID string
	Principal   string // principal name
	ClientID    string
	Admin       bool
	Scopes      []string
	ExpiresAt   time.Time
	TokenID     string
}

// HasScope reports whether the token carries scope s.
func (c Claims) HasScope(s string) bool { return slices.Contains(c.Scopes, s) }

// Token is an issued access token.
type Token struct {
	AccessToken string
	ExpiresIn   int
	Scope       string
}

// Service issues and verifies tokens for registered principals.
type Service struct {
	store  Store
	issuer string
	ttl    time.Duration
	now    func() time.Time
	log    *slog.Logger

	mu   sync.RWMutex
	keys map[string]*rsa.PrivateKey
	kid  string // current signing key

	// verified caches tokens whose signature and claims checked out, so that
	// the RSA verification runs once per token, not once per request. The
	// principal is still looked up on every request (disabling is immediate).
	verified *lru.Cache[string, tokenClaims]
}

// New returns a Service; call Init before use.
func New(store Store, opts Options) *Service {
	if opts.Issuer == "" {
		opts.Issuer = "floe"
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = 15 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cache, _ := lru.New[string, tokenClaims](16384)
	return &Service{store: store, issuer: opts.Issuer, ttl: opts.TokenTTL, now: opts.Now, log: opts.Logger,
		keys: map[string]*rsa.PrivateKey{}, verified: cache}
}

// Init loads the signing keys, creating the first one if there is none.
func (s *Service) Init(ctx context.Context) error {
	keys, err := s.store.SigningKeys(ctx)
	if err != nil {
		return fmt.Errorf("load signing keys: %w", err)
	}
	if len(keys) == 0 {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return fmt.Errorf("generate signing key: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return fmt.Errorf("encode signing key: %w", err)
		}
		sk := SigningKey{KID: uuid.NewString(), PrivatePEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), CreatedAt: s.now().UTC()}
		if err := s.store.AddSigningKey(ctx, sk); err != nil {
			return fmt.Errorf("store signing key: %w", err)
		}
		if keys, err = s.store.SigningKeys(ctx); err != nil {
			return fmt.Errorf("load signing keys: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range keys {
		blk, _ := pem.Decode(k.PrivatePEM)
		if blk == nil {
			return fmt.Errorf("signing key %s: not PEM", k.KID)
		}
		pk, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return fmt.Errorf("signing key %s: %w", k.KID, err)
		}
		rk, ok := pk.(*rsa.PrivateKey)
		if !ok {
			return fmt.Errorf("signing key %s: not RSA", k.KID)
		}
		s.keys[k.KID] = rk
		if i == 0 {
			s.kid = k.KID
		}
	}
	return nil
}

// CreatePrincipal registers a principal and returns its client id and the
// secret, which is shown only now and stored only as a hash. A non-empty
// secret is used as given (for bootstrap); otherwise one is generated.
func (s *Service) CreatePrincipal(ctx context.Context, name string, scopes []string, admin bool, clientID, secret string) (Principal, string, error) {
	if name == "" || len(name) > 128 || strings.ContainsAny(name, " \t\r\n/\\:") {
		return Principal{}, "", floe.E(floe.Invalid, "principal", "principal name %q must be 1-128 characters without spaces, '/', '\\' or ':'", name)
	}
	if clientID == "" {
		clientID = "floe-" + randomToken(12)
	}
	if secret == "" {
		secret = randomToken(32)
	}
	if len(scopes) == 0 {
		scopes = []string{ScopeCatalog}
	}
	h, err := HashSecret(secret)
	if err != nil {
		return Principal{}, "", err
	}
	p := Principal{ID: uuid.NewString(), Name: name, ClientID: clientID, SecretHash: h, Scopes: scopes,
		Admin: admin, CreatedAt: s.now().UTC()}
	if err := s.store.CreatePrincipal(ctx, p); err != nil {
		return Principal{}, "", err
	}
	return p, secret, nil
}

// ErrInvalidClient is returned for an unknown client, a wrong secret or a disabled client.
var ErrInvalidClient = &floe.Error{Kind: floe.Unauthenticated, Entity: "client", Msg: "invalid client credentials"}

// Authenticate checks a client id and secret.
func (s *Service) Authenticate(ctx context.Context, clientID, secret string) (Principal, error) {
	p, err := s.store.PrincipalByClientID(ctx, clientID)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			// Spend comparable time so that unknown ids cannot be told apart by timing.
			CheckSecret("$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g", secret)
			return Principal{}, ErrInvalidClient
		}
		return Principal{}, err
	}
	if !CheckSecret(p.SecretHash, secret) || p.Disabled {
		return Principal{}, ErrInvalidClient
	}
	return p, nil
}

// NarrowScopes returns the requested scopes if the principal holds them all;
// an empty request yields the principal's scopes. Unknown scopes are Forbidden.
func NarrowScopes(p Principal, requested string) ([]string, error) {
	req := strings.Fields(requested)
	if len(req) == 0 {
		return p.Scopes, nil
	}
	var out []string
	for _, r := range req {
		if slices.Contains(p.Scopes, r) {
			out = append(out, r)
			continue
		}
		// Iceberg clients send "catalog" or "PRINCIPAL_ROLE:ALL" by default: both mean
		// "what I am allowed", so they map to the principal's own scopes.
		if r == ScopeCatalog || r == "PRINCIPAL_ROLE:ALL" {
			out = append(out, p.Scopes...)
			continue
		}
		return nil, floe.E(floe.Forbidden, "scope", "scope %q is not granted to principal %q", r, p.Name)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

type tokenClaims struct {
	jwt.RegisteredClaims
	ClientID string `json:"client_id"`
	Name     string `json:"name"`
	Scope    string `json:"scope"`
	Admin    bool   `json:"adm,omitempty"`
}

// Issue mints an access token for p with the given scopes.
func (s *Service) Issue(p Principal, scopes []string) (Token, error) {
	now := s.now()
	exp := now.Add(s.ttl)
	c := tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: s.issuer, Subject: p.ID, Audience: jwt.ClaimStrings{s.issuer},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
			ID: uuid.NewString(),
		},
		ClientID: p.ClientID, Name: p.Name, Scope: strings.Join(scopes, " "), Admin: p.Admin,
	}
	s.mu.RLock()
	key, kid := s.keys[s.kid], s.kid
	s.mu.RUnlock()
	if key == nil {
		return Token{}, errors.New("auth: service not initialised")
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	t.Header["kid"] = kid
	signed, err := t.SignedString(key)
	if err != nil {
		return Token{}, fmt.Errorf("sign token: %w", err)
	}
	return Token{AccessToken: signed, ExpiresIn: int(s.ttl / time.Second), Scope: c.Scope}, nil
}

// ErrInvalidToken is returned for a missing, malformed, expired or revoked token.
var ErrInvalidToken = &floe.Error{Kind: floe.Unauthenticated, Entity: "token", Msg: "invalid or expired access token"}

// Verify checks a token's signature, issuer, audience and lifetime, and that
// its principal still exists and is enabled.
func (s *Service) Verify(ctx context.Context, raw string) (Claims, error) {
	c, ok := s.verified.Get(raw)
	if ok && !s.now().Before(c.ExpiresAt.Add(30*time.Second)) {
		s.verified.Remove(raw)
		ok = false
	}
	if !ok {
		var err error
		if c, err = s.parse(raw); err != nil {
			return Claims{}, err
		}
		s.verified.Add(raw, c)
	}
	p, err := s.store.PrincipalByClientID(ctx, c.ClientID)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return Claims{}, ErrInvalidToken
		}
		return Claims{}, err
	}
	if p.Disabled || p.ID != c.Subject {
		return Claims{}, ErrInvalidToken
	}
	return Claims{PrincipalID: p.ID, Principal: p.Name, ClientID: p.ClientID, Admin: p.Admin,
		Scopes: strings.Fields(c.Scope), ExpiresAt: c.ExpiresAt.Time, TokenID: c.ID}, nil
}

// parse checks a token's signature, algorithm, issuer, audience and lifetime.
func (s *Service) parse(raw string) (tokenClaims, error) {
	var c tokenClaims
	_, err := jwt.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		s.mu.RLock()
		defer s.mu.RUnlock()
		k, ok := s.keys[kid]
		if !ok {
			return nil, errors.New("unknown key id")
		}
		return &k.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(s.issuer), jwt.WithAudience(s.issuer),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(s.now), jwt.WithLeeway(30*time.Second))
	if err != nil {
		return tokenClaims{}, &floe.Error{Kind: floe.Unauthenticated, Entity: "token", Msg: ErrInvalidToken.Msg, Err: err}
	}
	return c, nil
}

// Refresh exchanges a valid token for a fresh one with the same or narrower scopes.
func (s *Service) Refresh(ctx context.Context, raw, scope string) (Token, error) {
	c, err := s.Verify(ctx, raw)
	if err != nil {
		return Token{}, err
	}
	p, err := s.store.PrincipalByClientID(ctx, c.ClientID)
	if err != nil {
		return Token{}, err
	}
	p.Scopes = c.Scopes
	scopes, err := NarrowScopes(p, scope)
	if err != nil {
		return Token{}, err
	}
	return s.Issue(p, scopes)
}

type claimsKey struct{}

// WithClaims returns a context carrying verified claims.
func WithClaims(ctx context.Context, c Claims) context.Context {
	return context.WithValue(ctx, claimsKey{}, c)
}

// ClaimsFrom returns the verified claims in ctx, if any.
func ClaimsFrom(ctx context.Context) (Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(Claims)
	return c, ok
}
