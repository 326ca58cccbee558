package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/floe-lake/floe"
)

// TrustedIssuer is an external identity provider whose JWTs may be
// exchanged (RFC 8693) for Floe tokens.
type TrustedIssuer struct {
	// Issuer must equal the iss of its tokens.
	Issuer string `yaml:"issuer"`
	// JWKSURL is where its signing keys are published.
	JWKSURL string `yaml:"jwks_url"`
	// Audience must be among the aud of its tokens.
	Audience string `yaml:"audience"`
	// PrincipalClaim names the claim whose value is the name of the Floe
	// principal the token speaks for (default "sub").
	PrincipalClaim string `yaml:"principal_claim"`
}

// Validate reports a missing or malformed field.
func (t TrustedIssuer) Validate() error {
	switch {
	case t.Issuer == "":
		return errors.New("trusted issuer: issuer is required")
	case t.JWKSURL == "":
		return fmt.Errorf("trusted issuer %s: jwks_url is required", t.Issuer)
	case t.Audience == "":
		return fmt.Errorf("trusted issuer %s: audience is required", t.Issuer)
	}
	return nil
}

// externalAlgs are the algorithms accepted from identity providers, each
// tied to a key type.
var externalAlgs = []string{"RS256", "RS384", "RS512", "PS256", "ES256", "ES384"}

// JWKS caching of external issuers.
const (
	jwksMaxAge       = 10 * time.Minute
	jwksRefetchAfter = 30 * time.Second // least time between fetches for an unknown kid
	jwksRetry        = 3 * time.Second  // least time between fetches after a failure
	jwksMaxBytes     = 1 << 20
)

// externalIssuer verifies one trusted issuer's tokens with its JWKS,
// fetched over HTTP and cached.
type externalIssuer struct {
	cfg    TrustedIssuer
	client *http.Client
	now    func() time.Time

	mu        sync.Mutex // held while fetching: one fetch at a time
	keys      []jose.JSONWebKey
	fetched   time.Time // last successful fetch
	attempted time.Time // last fetch attempt
	err       error     // why the last fetch failed
}

func newExternalIssuer(cfg TrustedIssuer, client *http.Client, now func() time.Time) *externalIssuer {
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = "sub"
	}
	return &externalIssuer{cfg: cfg, client: client, now: now}
}

// lookup returns the keys matching kid and alg, fetching the JWKS when it
// is older than jwksMaxAge (keeping the old keys if that fails), or when no
// key matches and the last fetch is older than jwksRefetchAfter (a key
// rotated at the IdP); unknown kids cannot make Floe hammer the IdP.
func (e *externalIssuer) lookup(ctx context.Context, kid, alg string) ([]jwt.VerificationKey, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if now.Sub(e.fetched) >= jwksMaxAge && now.Sub(e.attempted) >= jwksRetry {
		if err := e.fetch(ctx); err != nil {
			e.err = err
		}
	}
	if e.fetched.IsZero() {
		if e.err == nil {
			e.err = errors.New("JWKS not fetched yet")
		}
		return nil, e.err
	}
	keys := e.match(kid, alg)
	if len(keys) == 0 && now.Sub(e.attempted) >= jwksRefetchAfter {
		if err := e.fetch(ctx); err != nil {
			return nil, err
		}
		keys = e.match(kid, alg)
	}
	return keys, nil
}

func (e *externalIssuer) match(kid, alg string) []jwt.VerificationKey {
	var out []jwt.VerificationKey
	for _, k := range e.keys {
		if (kid != "" && k.KeyID != kid) || (k.Algorithm != "" && k.Algorithm != alg) || (k.Use != "" && k.Use != "sig") {
			continue
		}
		switch pub := k.Key.(type) {
		case *rsa.PublicKey:
			if alg[0] == 'R' || alg[0] == 'P' {
				out = append(out, pub)
			}
		case *ecdsa.PublicKey:
			if (alg == "ES256" && pub.Curve.Params().BitSize == 256) || (alg == "ES384" && pub.Curve.Params().BitSize == 384) {
				out = append(out, pub)
			}
		}
	}
	return out
}

// fetch reads the JWKS. Called with e.mu held.
func (e *externalIssuer) fetch(ctx context.Context) error {
	e.attempted = e.now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cfg.JWKSURL, nil)
	if err != nil {
		return fmt.Errorf("JWKS of %s: %w", e.cfg.Issuer, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch JWKS of %s: %w", e.cfg.Issuer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch JWKS of %s: HTTP %d", e.cfg.Issuer, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes+1))
	if err != nil {
		return fmt.Errorf("fetch JWKS of %s: %w", e.cfg.Issuer, err)
	}
	if len(body) > jwksMaxBytes {
		return fmt.Errorf("JWKS of %s is larger than 1 MiB", e.cfg.Issuer)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return fmt.Errorf("parse JWKS of %s: %w", e.cfg.Issuer, err)
	}
	e.keys, e.fetched, e.err = set.Keys, e.now(), nil
	return nil
}

// verifyExternal verifies a JWT of a trusted issuer: signature by a key of
// its JWKS, iss, aud containing the configured audience, exp (required),
// nbf and iat; the principal named by the configured claim must exist and
// be enabled.
func (s *Service) verifyExternal(ctx context.Context, raw string, e *externalIssuer) (Subject, error) {
	iss := e.cfg.Issuer
	fail := func(msg string, reason error) error {
		return invalidAssertion("token of "+quoteShort(iss)+": "+msg, reason)
	}
	parts, err := peek(raw)
	if err != nil {
		return Subject{}, fail("malformed JWT", err)
	}
	if !slices.Contains(externalAlgs, parts.Alg) {
		return Subject{}, fail("alg "+quoteShort(parts.Alg)+" is not allowed", errors.New("alg refused"))
	}
	if parts.Crit != nil {
		return Subject{}, fail("critical header parameters are not supported", errors.New("crit header present"))
	}
	keys, err := e.lookup(ctx, parts.Kid, parts.Alg)
	if err != nil {
		return Subject{}, &floe.Error{Kind: floe.Unavailable, Entity: "assertion", Msg: "cannot fetch the signing keys of " + quoteShort(iss), Err: err}
	}
	if len(keys) == 0 {
		return Subject{}, fail("no signing key with kid "+quoteShort(parts.Kid), errors.New("unknown kid"))
	}
	claims := jwt.MapClaims{}
	_, err = jwt.NewParser(jwt.WithValidMethods([]string{parts.Alg}), jwt.WithIssuer(iss), jwt.WithAudience(e.cfg.Audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(Leeway), jwt.WithTimeFunc(s.now)).
		ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return jwt.VerificationKeySet{Keys: keys}, nil })
	if err != nil {
		return Subject{}, fail("invalid token", err)
	}
	name, _ := claims[e.cfg.PrincipalClaim].(string)
	if name == "" {
		return Subject{}, fail("claim "+quoteShort(e.cfg.PrincipalClaim)+" is missing", errors.New("no principal claim"))
	}
	p, err := s.store.PrincipalByName(ctx, name)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return Subject{}, fail("no Floe principal is named "+quoteShort(name), errors.New("unmapped principal"))
		}
		return Subject{}, err
	}
	if p.Disabled {
		return Subject{}, fail("principal "+quoteShort(name)+" is disabled", errors.New("client is disabled"))
	}
	jti, _ := claims["jti"].(string)
	return Subject{Principal: p, Scopes: p.Scopes, Kind: SubjectExternal, TokenID: jti, Issuer: iss}, nil
}
