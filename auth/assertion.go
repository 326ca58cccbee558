package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/floe-lake/floe"
)

// MaxAssertionLifetime bounds exp - iat of a client's JWT assertion.
const MaxAssertionLifetime = 5 * time.Minute

// assertionAlgs are the algorithms clients may sign assertions with. Each
// registered key is pinned to one of them by its type, so neither "none",
// nor HMAC with a public key as the secret, nor any other confusion passes.
var assertionAlgs = []string{"RS256", "ES256"}

// Ways a Subject was proven.
const (
	// SubjectFloeToken is an unexpired Floe access token (refresh).
	SubjectFloeToken = "floe_token"
	// SubjectAssertion is a JWT signed with a key registered for the client.
	SubjectAssertion = "client_assertion"
	// SubjectExternal is a JWT of a trusted external identity provider.
	SubjectExternal = "external_idp"
)

// Subject is the principal a verified token or assertion speaks for.
type Subject struct {
	Principal Principal
	// Scopes bound what a token issued for the subject may carry: the
	// principal's scopes, or those of the Floe token being exchanged.
	Scopes []string
	// Kind is how the subject was proven (SubjectFloeToken, ...).
	Kind string
	// TokenID is the jti of the presented JWT ("" if it had none).
	TokenID string
	// Issuer is the iss of the presented JWT.
	Issuer string
}

func (s Subject) scoped() Principal {
	p := s.Principal
	p.Scopes = s.Scopes
	return p
}

// Narrow returns the scopes a token issued for s may carry when the client
// requests the space-separated scopes requested; see NarrowScopes.
func (s Subject) Narrow(requested string) ([]string, error) {
	return NarrowScopes(s.scoped(), requested)
}

// invalidAssertion builds the error for a refused assertion: msg is safe to
// show the client; reason (possibly more precise) is for logs and audit.
func invalidAssertion(msg string, reason error) error {
	return &floe.Error{Kind: floe.Unauthenticated, Entity: "assertion", Msg: msg, Err: reason}
}

// jwtParts is the unverified header and claims of a compact JWS.
type jwtParts struct {
	Alg  string `json:"alg"`
	Kid  string `json:"kid"`
	Crit any    `json:"crit"`
	Iss  string
}

// peek decodes a compact JWS's header and iss without verifying anything.
func peek(raw string) (jwtParts, error) {
	var p jwtParts
	if len(raw) > maxTokenBytes {
		return p, errors.New("JWT is larger than 16 KiB")
	}
	segs := strings.Split(raw, ".")
	if len(segs) != 3 {
		return p, fmt.Errorf("JWT has %d segments, want 3", len(segs))
	}
	h, err := base64.RawURLEncoding.DecodeString(segs[0])
	if err != nil {
		return p, fmt.Errorf("JWT header is not base64url: %w", err)
	}
	if err := json.Unmarshal(h, &p); err != nil {
		return p, fmt.Errorf("JWT header is not a JSON object: %w", err)
	}
	b, err := base64.RawURLEncoding.DecodeString(segs[1])
	if err != nil {
		return p, fmt.Errorf("JWT payload is not base64url: %w", err)
	}
	var c struct {
		Iss any `json:"iss"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return p, fmt.Errorf("JWT payload is not a JSON object: %w", err)
	}
	p.Iss, _ = c.Iss.(string)
	return p, nil
}

// VerifySubjectToken verifies the subject_token of an RFC 8693 token
// exchange. By its (unverified) iss it is one of: a Floe access token
// (refresh), a JWT of a trusted external identity provider, or a JWT
// assertion signed by a client with a key registered for it (iss = client
// id). Errors are Unauthenticated with a client-safe message.
func (s *Service) VerifySubjectToken(ctx context.Context, raw string) (Subject, error) {
	parts, err := peek(raw)
	if err != nil {
		return Subject{}, invalidAssertion("subject_token is not a well-formed JWT", err)
	}
	switch {
	case parts.Iss == s.Issuer():
		return s.VerifyFloeToken(ctx, raw)
	case s.external[parts.Iss] != nil:
		return s.verifyExternal(ctx, raw, s.external[parts.Iss])
	default:
		return s.VerifyAssertion(ctx, raw, "")
	}
}

// VerifyFloeToken verifies an unexpired, unrevoked Floe access token as the
// subject of a refresh.
func (s *Service) VerifyFloeToken(ctx context.Context, raw string) (Subject, error) {
	c, err := s.Verify(ctx, raw)
	if err != nil {
		return Subject{}, err
	}
	p := Principal{ID: c.PrincipalID, Name: c.Principal, ClientID: c.ClientID, Admin: c.Admin, Scopes: c.Scopes,
		TokensNotBefore: c.TokensNotBefore}
	return Subject{Principal: p, Scopes: c.Scopes, Kind: SubjectFloeToken, TokenID: c.TokenID, Issuer: s.Issuer()}, nil
}

// VerifyAssertion verifies a JWT assertion signed by a client with one of
// its registered keys (RFC 7523): client authentication by private_key_jwt,
// the jwt-bearer grant, and subject tokens of token exchange. clientID, if
// not empty, must equal iss.
//
// The rules: alg RS256 or ES256, matching the key's pinned algorithm (kid
// selects the key when present); iss = sub = the client id (a missing sub
// counts as iss, as the delta-sharing client sends none); aud names Floe's
// issuer or token endpoint; exp required, not past; nbf and iat not in the
// future (each with Leeway); exp - iat at most MaxAssertionLifetime; a jti
// that was never used before (it is remembered until exp).
func (s *Service) VerifyAssertion(ctx context.Context, raw, clientID string) (Subject, error) {
	parts, err := peek(raw)
	if err != nil {
		return Subject{}, invalidAssertion("the JWT assertion is malformed", err)
	}
	if !slices.Contains(assertionAlgs, parts.Alg) {
		return Subject{}, invalidAssertion(fmt.Sprintf("JWT assertion alg %s is not allowed; sign with RS256 or ES256", quoteShort(parts.Alg)),
			fmt.Errorf("alg %s refused", quoteShort(parts.Alg)))
	}
	if parts.Crit != nil {
		return Subject{}, invalidAssertion("JWT assertion has critical header parameters Floe does not understand", errors.New("crit header present"))
	}
	iss := parts.Iss
	if iss == "" {
		return Subject{}, invalidAssertion("JWT assertion has no iss (the client id)", errors.New("no iss"))
	}
	if clientID != "" && clientID != iss {
		return Subject{}, invalidAssertion("JWT assertion iss does not match client_id", fmt.Errorf("iss %s != client_id %s", quoteShort(iss), quoteShort(clientID)))
	}
	badSig := func(reason error) error {
		return invalidAssertion("JWT assertion is not signed by a key registered for client "+quoteShort(iss), reason)
	}
	p, err := s.store.PrincipalByClientID(ctx, iss)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return Subject{}, badSig(errors.New("unknown client id"))
		}
		return Subject{}, err
	}
	stored, err := s.store.ClientKeys(ctx, p.ID)
	if err != nil {
		return Subject{}, err
	}
	var keys []jwt.VerificationKey
	for _, k := range stored {
		if k.Alg != parts.Alg || (parts.Kid != "" && k.KID != parts.Kid) {
			continue
		}
		pub, err := verificationKey(k)
		if err != nil {
			s.log.WarnContext(ctx, "auth: unusable client key", "principal", p.Name, "kid", k.KID, "err", err)
			continue
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return Subject{}, badSig(fmt.Errorf("no %s key registered with kid %s", parts.Alg, quoteShort(parts.Kid)))
	}
	var c jwt.RegisteredClaims
	_, err = jwt.NewParser(jwt.WithValidMethods([]string{parts.Alg}), jwt.WithoutClaimsValidation()).
		ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return jwt.VerificationKeySet{Keys: keys}, nil })
	if err != nil {
		return Subject{}, badSig(err)
	}
	if p.Disabled {
		return Subject{}, invalidAssertion("client "+quoteShort(iss)+" is disabled", errors.New("client is disabled"))
	}
	if err := s.checkAssertionClaims(c); err != nil {
		return Subject{}, err
	}
	if err := s.store.UseJTI(ctx, iss+"\x1f"+c.ID, c.ExpiresAt.Add(Leeway)); err != nil {
		if floe.KindOf(err) == floe.AlreadyExists {
			return Subject{}, invalidAssertion("JWT assertion jti was already used; make a new assertion for every request", errors.New("jti replayed"))
		}
		return Subject{}, err
	}
	return Subject{Principal: p, Scopes: p.Scopes, Kind: SubjectAssertion, TokenID: c.ID, Issuer: iss}, nil
}

// checkAssertionClaims applies the claim rules of VerifyAssertion to a
// signature-verified assertion.
func (s *Service) checkAssertionClaims(c jwt.RegisteredClaims) error {
	fail := func(msg string) error { return invalidAssertion(msg, errors.New(msg)) }
	now := s.now()
	switch {
	case c.Subject != "" && c.Subject != c.Issuer:
		return fail("JWT assertion sub must equal iss (the client id)")
	case !audienceOK(c.Audience, s.audiences()):
		return fail("JWT assertion aud must be " + quoteShort(s.audiences()[1]) + " or " + quoteShort(s.audiences()[0]))
	case c.ExpiresAt == nil:
		return fail("JWT assertion has no exp")
	case !now.Before(c.ExpiresAt.Add(Leeway)):
		return fail("JWT assertion has expired")
	case c.NotBefore != nil && c.NotBefore.After(now.Add(Leeway)):
		return fail("JWT assertion is not valid yet (nbf is in the future)")
	case c.IssuedAt != nil && c.IssuedAt.After(now.Add(Leeway)):
		return fail("JWT assertion was issued in the future (iat)")
	case c.ID == "":
		return fail("JWT assertion has no jti")
	case len(c.ID) > 256:
		return fail("JWT assertion jti is longer than 256 characters")
	}
	start := now
	if c.IssuedAt != nil {
		start = c.IssuedAt.Time
	}
	if c.ExpiresAt.Sub(start) > MaxAssertionLifetime {
		return fail("JWT assertion lifetime (exp - iat) exceeds 5 minutes")
	}
	return nil
}

func audienceOK(aud []string, want []string) bool {
	for _, a := range aud {
		if slices.Contains(want, a) {
			return true
		}
	}
	return false
}

// quoteShort quotes s for a message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}
