package pgwire

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Authenticator decides who may log in. pgwire calls it during startup,
// with a context bounded by Options.StartupTimeout.
type Authenticator interface {
	// SCRAMVerifier returns the SCRAM-SHA-256 verifier of a user that has a
	// password, and the identity the user logs in as. ok is false when the
	// user has no password (or does not exist); pgwire then asks for an
	// access token instead.
	SCRAMVerifier(ctx context.Context, user string) (v *ScramVerifier, id Identity, ok bool, err error)
	// Token verifies an OAuth access token presented as the password of
	// user. It returns ErrBadCredentials (or a floe.Unauthenticated,
	// Forbidden or NotFound error) for a token that does not log in; other
	// errors are internal. pgwire also refuses the login when the identity's
	// Principal differs from user.
	Token(ctx context.Context, user, token string) (Identity, error)
}

// ErrBadCredentials is what an Authenticator returns for a wrong password
// or token; the client sees SQLSTATE 28P01.
var ErrBadCredentials = errors.New("invalid credentials")

// DefaultScramIterations is the PBKDF2 iteration count of new verifiers
// (PostgreSQL's default scram_iterations).
const DefaultScramIterations = 4096

// ScramVerifier is what a server stores for a SCRAM-SHA-256 password
// (RFC 5802, RFC 7677); the password itself cannot be derived from it.
type ScramVerifier struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte // H(ClientKey)
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// NewScramVerifier derives a verifier for password with a fresh random
// 16-byte salt and DefaultScramIterations. The password is normalized with
// SASLprep as PostgreSQL and its clients do.
func NewScramVerifier(password string) (*ScramVerifier, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("pgwire: scram salt: %w", err)
	}
	return deriveScramVerifier(password, salt, DefaultScramIterations)
}

func deriveScramVerifier(password string, salt []byte, iterations int) (*ScramVerifier, error) {
	salted, err := pbkdf2.Key(sha256.New, saslPrep(password), salt, iterations, sha256.Size)
	if err != nil {
		return nil, fmt.Errorf("pgwire: scram key: %w", err)
	}
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	return &ScramVerifier{
		Salt:       salt,
		Iterations: iterations,
		StoredKey:  stored[:],
		ServerKey:  hmacSHA256(salted, []byte("Server Key")),
	}, nil
}

// String encodes v in PostgreSQL's pg_authid format:
// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (base64).
func (v *ScramVerifier) String() string {
	b := base64.StdEncoding
	return "SCRAM-SHA-256$" + strconv.Itoa(v.Iterations) + ":" + b.EncodeToString(v.Salt) +
		"$" + b.EncodeToString(v.StoredKey) + ":" + b.EncodeToString(v.ServerKey)
}

// ParseScramVerifier decodes the format String produces.
func ParseScramVerifier(s string) (*ScramVerifier, error) {
	bad := errors.New("pgwire: malformed SCRAM verifier")
	rest, ok := strings.CutPrefix(s, "SCRAM-SHA-256$")
	if !ok {
		return nil, bad
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return nil, bad
	}
	iter, salt, ok1 := strings.Cut(params, ":")
	stored, server, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return nil, bad
	}
	n, err := strconv.Atoi(iter)
	if err != nil || n < 1 {
		return nil, bad
	}
	v := &ScramVerifier{Iterations: n}
	b := base64.StdEncoding
	if v.Salt, err = b.DecodeString(salt); err != nil || len(v.Salt) == 0 {
		return nil, bad
	}
	if v.StoredKey, err = b.DecodeString(stored); err != nil || len(v.StoredKey) != sha256.Size {
		return nil, bad
	}
	if v.ServerKey, err = b.DecodeString(server); err != nil || len(v.ServerKey) != sha256.Size {
		return nil, bad
	}
	return v, nil
}

// Check reports whether password matches v (for tools and tests; logins go
// through the SASL exchange).
func (v *ScramVerifier) Check(password string) bool {
	w, err := deriveScramVerifier(password, v.Salt, v.Iterations)
	return err == nil && hmac.Equal(w.StoredKey, v.StoredKey) && hmac.Equal(w.ServerKey, v.ServerKey)
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}
