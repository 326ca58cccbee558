package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/netallow"
)

// Leeway is the clock skew tolerated when checking exp, nbf and iat.
const Leeway = 30 * time.Second

// TokenEndpointPath is the path of the token endpoint under the issuer
// URL; JWT assertions may name issuer+TokenEndpointPath as their audience.
const TokenEndpointPath = "/v1/oauth/tokens"

// DefaultTokenTTL is the lifetime of access tokens unless configured.
const DefaultTokenTTL = 15 * time.Minute

// Options configures a Service. Zero values mean defaults.
type Options struct {
	// Issuer is the iss claim of issued tokens and the OAuth issuer
	// identifier: Floe's public base URL (default "floe"; see SetIssuer).
	Issuer string
	// TokenTTL is the lifetime of access tokens (default 15 minutes).
	TokenTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives structured logs. Nothing secret is ever logged.
	Logger *slog.Logger
	// TrustedIssuers are external identity providers whose JWTs may be
	// exchanged for Floe tokens.
	TrustedIssuers []TrustedIssuer
	// HTTPClient fetches the JWKS of trusted issuers (default: a client
	// with a 10 s timeout).
	HTTPClient *http.Client
	// KeyRefresh is how often the signing keys are reloaded from the store,
	// so that a key rotated on another node is picked up (default 1 minute).
	KeyRefresh time.Duration
	// SecretCacheTTL is how long a successful secret check is remembered
	// (default 5 minutes; negative disables the cache). See secretCache.
	SecretCacheTTL time.Duration
	// SigningAlg is the algorithm of new signing keys: AlgES256 (default)
	// or AlgRS256. Init rotates to a key of this algorithm if the current
	// one differs; tokens signed with the old key keep verifying.
	SigningAlg string
	// Sealer seals the signing keys' private keys in the store (see
	// internal/keywrap). Nil stores them in plaintext (tests only: then a
	// copy of the store signs tokens).
	Sealer Sealer
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
	// PolicyVersion is the authorization policy's version, read from the
	// store together with the token's state when HasPolicyVersion is set.
	// It is as fresh as the revocation check, so it stands for the
	// version "now" for the request that verified the token, and only
	// for that request.
	PolicyVersion    int64
	HasPolicyVersion bool
	// RevocationVersion is the revocation version (package revoke) read
	// from the store together with the token's state, before the request
	// is authorized, when HasRevocationVersion is set: credentials vended
	// for the request are minted under it, so that a revocation committed
	// after it refuses them and one committed before it does not.
	RevocationVersion    int64
	HasRevocationVersion bool
	// AllowedCIDRs is the principal's network allowlist as the store has
	// it now (empty: any address); vended credentials carry it.
	AllowedCIDRs []string
	// TokensNotBefore is the principal's Principal.TokensNotBefore: a
	// token issued from it (a refresh) is dated no earlier.
	TokensNotBefore time.Time
}

// HasScope reports whether the token carries scope s.
func (c Claims) HasScope(s string) bool { return slices.Contains(c.Scopes, s) }

// Token is an issued access token.
type Token struct {
	AccessToken string
	ExpiresIn   int
	Scope       string
	TokenID     string
	ExpiresAt   time.Time
}

// Service issues and verifies tokens for registered principals. It is safe
// for concurrent use.
type Service struct {
	store  Store
	sealer Sealer
	ttl    time.Duration
	alg    string
	now    func() time.Time
	log    *slog.Logger

	issuerMu sync.RWMutex
	issuer   string

	keys keyring

	// verified caches tokens whose signature and claims checked out, so that
	// the RSA verification runs once per token, not once per request. The
	// revocation list and the principal are still read on every request, so
	// revoking a token or disabling a client takes effect at once on every node.
	verified *lru.Cache[string, tokenClaims]
	secrets  *secretCache
	external map[string]*externalIssuer
	// states coalesces the concurrent token-state reads of one token
	// without letting any request see a state read before it arrived.
	states *stateReads
}

// New returns a Service; call Init before use.
func New(store Store, opts Options) *Service {
	if opts.Issuer == "" {
		opts.Issuer = "floe"
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = DefaultTokenTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.KeyRefresh <= 0 {
		opts.KeyRefresh = time.Minute
	}
	if opts.SecretCacheTTL == 0 {
		opts.SecretCacheTTL = 5 * time.Minute
	}
	if opts.SigningAlg != AlgRS256 {
		opts.SigningAlg = AlgES256
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	cache, _ := lru.New[string, tokenClaims](16384)
	s := &Service{store: store, sealer: opts.Sealer, issuer: strings.TrimSuffix(opts.Issuer, "/"), ttl: opts.TokenTTL, alg: opts.SigningAlg, now: opts.Now,
		log: opts.Logger, verified: cache, secrets: newSecretCache(opts.SecretCacheTTL, opts.Now),
		external: map[string]*externalIssuer{}}
	s.keys = keyring{refresh: opts.KeyRefresh, keys: map[string]signer{}}
	s.states = newStateReads(func(ctx context.Context, clientID, jti string) (TokenState, error) {
		return s.store.TokenState(ctx, clientID, jti)
	})
	for _, ti := range opts.TrustedIssuers {
		s.external[ti.Issuer] = newExternalIssuer(ti, opts.HTTPClient, opts.Now)
	}
	return s
}

// Init loads the signing keys, creating one if there is none or if the
// current one does not use the configured algorithm.
func (s *Service) Init(ctx context.Context) error {
	if err := s.reloadKeys(ctx); err != nil {
		return err
	}
	if k, kid := s.signingKey(); kid != "" && k.alg == s.alg {
		return nil
	}
	_, err := s.RotateKey(ctx)
	return err
}

// Issuer returns the issuer identifier (the iss of issued tokens).
func (s *Service) Issuer() string {
	s.issuerMu.RLock()
	defer s.issuerMu.RUnlock()
	return s.issuer
}

// SetIssuer changes the issuer, for a server that learns its URL only when
// it listens. Tokens issued before under another issuer stop verifying.
func (s *Service) SetIssuer(iss string) {
	s.issuerMu.Lock()
	defer s.issuerMu.Unlock()
	s.issuer = strings.TrimSuffix(iss, "/")
}

// TokenTTL returns the lifetime of issued tokens.
func (s *Service) TokenTTL() time.Duration { return s.ttl }

// audiences returns the aud values a JWT assertion may carry.
func (s *Service) audiences() []string {
	iss := s.Issuer()
	return []string{iss, iss + TokenEndpointPath}
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
	for _, sc := range scopes {
		if !validScope(sc) {
			return Principal{}, "", floe.E(floe.Invalid, "scope", "scope %q is not a valid OAuth scope token", sc)
		}
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

// MaxPrincipalCIDRs bounds a principal's allowlist: vended credentials
// carry it inside their session token, which is bounded too.
const MaxPrincipalCIDRs = 32

// SetAllowedCIDRs replaces the network allowlist of the principal named
// name and returns its canonical form; an empty list allows any address.
// Entries are CIDR prefixes or addresses; Invalid for a bad entry or more
// than MaxPrincipalCIDRs, NotFound for an unknown principal. Tokens of the
// principal are checked against the new list from their next request on;
// credentials already vended keep the list they were minted with.
func (s *Service) SetAllowedCIDRs(ctx context.Context, name string, entries []string) ([]string, error) {
	cidrs, err := CanonicalCIDRs(entries)
	if err != nil {
		return nil, err
	}
	if err := s.store.SetPrincipalAllowedCIDRs(ctx, name, cidrs); err != nil {
		return nil, err
	}
	return cidrs, nil
}

// CanonicalCIDRs validates a principal's allowlist and returns it in
// canonical form (sorted masked prefixes, no duplicates).
func CanonicalCIDRs(entries []string) ([]string, error) {
	cidrs, err := netallow.Canonical(entries)
	if err != nil {
		return nil, err
	}
	if len(cidrs) > MaxPrincipalCIDRs {
		return nil, floe.E(floe.Invalid, "network", "a principal's allowlist has at most %d entries, not %d", MaxPrincipalCIDRs, len(cidrs))
	}
	if len(cidrs) == 0 {
		return nil, nil
	}
	return cidrs, nil
}

// ErrInvalidClient is returned for an unknown client, a wrong secret or a
// disabled client; the wrapped error (for logs and audit) says which.
var ErrInvalidClient = &floe.Error{Kind: floe.Unauthenticated, Entity: "client", Msg: "invalid client credentials"}

func invalidClient(reason string) error {
	return &floe.Error{Kind: floe.Unauthenticated, Entity: "client", Msg: ErrInvalidClient.Msg, Err: errors.New(reason)}
}

// dummyHash is checked against for unknown clients so that they cost as
// much time as known ones.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"

// Authenticate checks a client id and secret (client_secret_basic and
// client_secret_post).
func (s *Service) Authenticate(ctx context.Context, clientID, secret string) (Principal, error) {
	p, err := s.store.PrincipalByClientID(ctx, clientID)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			CheckSecret(dummyHash, secret)
			return Principal{}, invalidClient("unknown client id")
		}
		return Principal{}, err
	}
	ok := s.secretMatches(clientID, secret, p.SecretHash)
	if !ok && p.OldSecretHash != "" && s.now().Before(p.OldSecretExpiresAt) {
		// The secret before a rotation with a grace period, until it ends.
		ok = s.secretMatches(clientID, secret, p.OldSecretHash)
	}
	if !ok {
		return Principal{}, invalidClient("wrong client secret")
	}
	if p.Disabled {
		return Principal{}, invalidClient("client is disabled")
	}
	return p, nil
}

// secretMatches checks secret against the stored hash, through the cache
// of successful checks.
func (s *Service) secretMatches(clientID, secret, hash string) bool {
	if s.secrets.check(clientID, secret, hash) {
		return true
	}
	if !CheckSecret(hash, secret) {
		return false
	}
	s.secrets.add(clientID, secret, hash)
	return true
}

// MaxSecretGrace bounds the grace period of a client secret rotation (30
// days, as for a recipient's token rotation).
const MaxSecretGrace = 30 * 24 * time.Hour

// RotateSecret gives the principal named name a new client secret, shown
// only now and stored only as a hash. With grace 0 the old secret is
// refused at once; with a grace period it keeps working until then (only
// the secret just replaced: an older one is forgotten). Tokens already
// issued stay valid (see RevokeTokens). Invalid for a grace outside 0 to
// MaxSecretGrace, NotFound for an unknown principal.
func (s *Service) RotateSecret(ctx context.Context, name string, grace time.Duration) (Principal, string, error) {
	if grace < 0 || grace > MaxSecretGrace {
		return Principal{}, "", floe.E(floe.Invalid, "principal", "grace must be 0 to %d seconds", int64(MaxSecretGrace/time.Second))
	}
	secret := randomToken(32)
	h, err := HashSecret(secret)
	if err != nil {
		return Principal{}, "", err
	}
	var until time.Time
	if grace > 0 {
		until = s.now().Add(grace)
	}
	if err := s.store.RotatePrincipalSecret(ctx, name, h, until); err != nil {
		return Principal{}, "", err
	}
	p, err := s.store.PrincipalByName(ctx, name)
	if err != nil {
		return Principal{}, "", err
	}
	return p, secret, nil
}

// RevokeTokens refuses, on every node sharing the store and from the next
// request on, every access token issued to the principal named name until
// now, and the storage credentials vended and SQL sessions opened under
// them (package revoke, kind Tokens). New tokens can be obtained at once.
// It returns the principal's new TokensNotBefore; NotFound for an unknown
// principal.
//
// Tokens carry their issue time in microseconds (claim iat_us, beside the
// whole seconds of iat), so the not-before is the microsecond after now:
// every token issued until now is earlier, and two revocations within one
// second each refuse the tokens issued between them. Issue dates a token
// no earlier than its principal's not-before, so that a node whose clock
// is behind still issues working tokens.
func (s *Service) RevokeTokens(ctx context.Context, name string) (time.Time, error) {
	nb := s.now().UTC().Truncate(time.Microsecond).Add(time.Microsecond)
	if err := s.store.RevokePrincipalTokens(ctx, name, nb); err != nil {
		return time.Time{}, err
	}
	return nb, nil
}

type tokenClaims struct {
	jwt.RegisteredClaims
	ClientID string `json:"client_id"`
	Name     string `json:"name"`
	Scope    string `json:"scope"`
	Admin    bool   `json:"adm,omitempty"`
	// IssuedAtMicros is the issue time in Unix microseconds (iat has whole
	// seconds), compared with the principal's TokensNotBefore.
	IssuedAtMicros int64 `json:"iat_us,omitempty"`
}

// issuedMicros is when the token was issued, in Unix microseconds: iat_us,
// or, for a token without it, the start of its iat second.
func (c tokenClaims) issuedMicros() int64 {
	if c.IssuedAtMicros != 0 {
		return c.IssuedAtMicros
	}
	if c.IssuedAt == nil {
		return 0
	}
	return c.IssuedAt.Unix() * 1e6
}

// Issue mints an access token for p with the given scopes, signed with the
// current signing key.
//
// A principal with an allowlist gets no token for a client address (in
// ctx, see netallow.WithClient) outside it: a floe.Forbidden error, entity
// "network".
func (s *Service) Issue(ctx context.Context, p Principal, scopes []string) (Token, error) {
	if err := netallow.CheckPrincipal(ctx, p.Name, p.AllowedCIDRs); err != nil {
		return Token{}, err
	}
	if err := s.maybeReloadKeys(ctx); err != nil {
		s.log.WarnContext(ctx, "auth: reloading signing keys failed; signing with the loaded ones", "err", err)
	}
	now := s.now()
	exp := now.Add(s.ttl)
	iss := s.Issuer()
	// A token is dated no earlier than its principal's not-before (a node
	// whose clock is behind the one that revoked), so that it is not refused.
	iat := now.Truncate(time.Microsecond)
	if iat.Before(p.TokensNotBefore) {
		iat = p.TokensNotBefore
	}
	c := tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: iss, Subject: p.ID, Audience: jwt.ClaimStrings{iss},
			IssuedAt: jwt.NewNumericDate(iat), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
			ID: uuid.NewString(),
		},
		ClientID: p.ClientID, Name: p.Name, Scope: strings.Join(scopes, " "), Admin: p.Admin,
		IssuedAtMicros: iat.UnixMicro(),
	}
	key, kid := s.signingKey()
	if kid == "" {
		return Token{}, errors.New("auth: service not initialised")
	}
	t := jwt.NewWithClaims(key.method(), c)
	t.Header["kid"] = kid
	signed, err := t.SignedString(key.priv)
	if err != nil {
		return Token{}, fmt.Errorf("sign token: %w", err)
	}
	return Token{AccessToken: signed, ExpiresIn: int(s.ttl / time.Second), Scope: c.Scope, TokenID: c.ID,
		ExpiresAt: c.ExpiresAt.Time}, nil
}

// ErrInvalidToken is returned for a missing, malformed, expired or revoked token.
var ErrInvalidToken = &floe.Error{Kind: floe.Unauthenticated, Entity: "token", Msg: "invalid or expired access token"}

func invalidToken(reason error) error {
	return &floe.Error{Kind: floe.Unauthenticated, Entity: "token", Msg: ErrInvalidToken.Msg, Err: reason}
}

// Verify checks a token's signature, issuer, audience and lifetime, that it
// was not revoked, and that its principal still exists and is enabled. The
// signature check is cached per token; the revocation list and the
// principal are read from the store for every call, by a read that began
// after the call (concurrent calls of one token may share such a read).
func (s *Service) Verify(ctx context.Context, raw string) (Claims, error) {
	c, err := s.verifiedClaims(ctx, raw)
	if err != nil {
		return Claims{}, err
	}
	ts, err := s.states.get(ctx, c.ClientID, c.ID)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return Claims{}, invalidToken(errors.New("client no longer exists"))
		}
		return Claims{}, err
	}
	p := ts.Principal
	if ts.Revoked {
		return Claims{}, invalidToken(errors.New("token was revoked"))
	}
	if p.Disabled {
		return Claims{}, invalidToken(errors.New("client is disabled"))
	}
	if p.ID != c.Subject {
		return Claims{}, invalidToken(errors.New("client id now belongs to another principal"))
	}
	if !p.TokensNotBefore.IsZero() && c.issuedMicros() < p.TokensNotBefore.UnixMicro() {
		return Claims{}, invalidToken(errors.New("the principal's tokens were revoked"))
	}
	// The principal's allowlist as it is now, against the client address
	// the listener resolved (none for in-process callers).
	if err := netallow.CheckPrincipal(ctx, p.Name, p.AllowedCIDRs); err != nil {
		return Claims{}, err
	}
	return Claims{PrincipalID: p.ID, Principal: p.Name, ClientID: p.ClientID, Admin: p.Admin,
		Scopes: strings.Fields(c.Scope), ExpiresAt: c.ExpiresAt.Time, TokenID: c.ID,
		PolicyVersion: ts.PolicyVersion, HasPolicyVersion: ts.HasPolicyVersion,
		RevocationVersion: ts.RevocationVersion, HasRevocationVersion: ts.HasRevocationVersion, AllowedCIDRs: p.AllowedCIDRs,
		TokensNotBefore: p.TokensNotBefore}, nil
}

// verifiedClaims returns the claims of a token whose signature and claims
// check out, from the cache when it was checked before.
func (s *Service) verifiedClaims(ctx context.Context, raw string) (tokenClaims, error) {
	c, ok := s.verified.Get(raw)
	if ok && (!s.now().Before(c.ExpiresAt.Add(Leeway)) || c.Issuer != s.Issuer()) {
		s.verified.Remove(raw)
		ok = false
	}
	if ok {
		return c, nil
	}
	c, err := s.parse(ctx, raw, true)
	if err != nil {
		return tokenClaims{}, err
	}
	s.verified.Add(raw, c)
	return c, nil
}

// maxTokenBytes bounds the JWTs Floe parses.
const maxTokenBytes = 16 << 10

// parse checks a Floe token's signature and algorithm and, when validate is
// set, its issuer, audience and lifetime.
func (s *Service) parse(ctx context.Context, raw string, validate bool) (tokenClaims, error) {
	if len(raw) > maxTokenBytes {
		return tokenClaims{}, invalidToken(errors.New("token too large"))
	}
	var c tokenClaims
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{AlgES256, AlgRS256})}
	if validate {
		iss := s.Issuer()
		opts = append(opts, jwt.WithIssuer(iss), jwt.WithAudience(iss), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
			jwt.WithTimeFunc(s.now), jwt.WithLeeway(Leeway))
	} else {
		opts = append(opts, jwt.WithoutClaimsValidation())
	}
	_, err := jwt.NewParser(opts...).ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, alg := s.publicKey(ctx, kid)
		if k == nil {
			return nil, fmt.Errorf("unknown key id %q", kid)
		}
		if t.Method.Alg() != alg { // each key verifies only its own algorithm
			return nil, fmt.Errorf("alg %s does not match key %q", t.Method.Alg(), kid)
		}
		return k, nil
	})
	if err != nil {
		return tokenClaims{}, invalidToken(err)
	}
	if c.ID == "" || c.ClientID == "" {
		return tokenClaims{}, invalidToken(errors.New("token has no jti or client_id"))
	}
	return c, nil
}

// Refresh exchanges a valid token for a fresh one with the same or narrower scopes.
func (s *Service) Refresh(ctx context.Context, raw, scope string) (Token, error) {
	sub, err := s.VerifyFloeToken(ctx, raw)
	if err != nil {
		return Token{}, err
	}
	scopes, err := NarrowScopes(sub.scoped(), scope)
	if err != nil {
		return Token{}, err
	}
	return s.Issue(ctx, sub.Principal, scopes)
}

// TokenInfo describes a Floe access token whose signature verified.
type TokenInfo struct {
	TokenID     string
	ClientID    string
	PrincipalID string
	ExpiresAt   time.Time
}

// Inspect checks that raw was signed by one of Floe's keys and returns what
// it says, whatever its issuer or lifetime (for revocation).
func (s *Service) Inspect(ctx context.Context, raw string) (TokenInfo, error) {
	c, err := s.parse(ctx, raw, false)
	if err != nil {
		return TokenInfo{}, err
	}
	if c.ExpiresAt == nil {
		return TokenInfo{}, invalidToken(errors.New("token has no exp"))
	}
	return TokenInfo{TokenID: c.ID, ClientID: c.ClientID, PrincipalID: c.Subject, ExpiresAt: c.ExpiresAt.Time}, nil
}

// Revoke revokes the token t on every node sharing the store: Verify
// refuses it from the next request on. An expired token needs no entry and
// revoked is false.
func (s *Service) Revoke(ctx context.Context, t TokenInfo) (revoked bool, err error) {
	if !s.now().Before(t.ExpiresAt.Add(Leeway)) {
		return false, nil
	}
	if err := s.store.RevokeToken(ctx, t.TokenID, t.ExpiresAt.Add(Leeway)); err != nil {
		return false, err
	}
	return true, nil
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
