package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"

	"github.com/floe-lake/floe"
)

// Bounds on registered RSA keys.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// ParsePublicKey parses a PEM public key a client will sign assertions with:
// RSA (2048 to 8192 bits, signing RS256) or EC P-256 (signing ES256). It
// returns the key in PKIX PEM form, its pinned algorithm and its kid, the
// RFC 7638 SHA-256 thumbprint (base64url). Errors are Invalid (entity
// "client key").
func ParsePublicKey(pemBytes []byte) (pub crypto.PublicKey, alg, kid string, pkix []byte, err error) {
	invalid := func(format string, args ...any) error {
		return floe.E(floe.Invalid, "client key", format, args...)
	}
	blk, _ := pem.Decode(pemBytes)
	if blk == nil {
		return nil, "", "", nil, invalid("not a PEM file: expected -----BEGIN PUBLIC KEY-----")
	}
	switch blk.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(blk.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(blk.Bytes)
	case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
		return nil, "", "", nil, invalid("this is a private key; register only the public key (openssl pkey -in key.pem -pubout -out key.pub.pem)")
	default:
		return nil, "", "", nil, invalid("PEM block %q is not a public key", blk.Type)
	}
	if err != nil {
		return nil, "", "", nil, &floe.Error{Kind: floe.Invalid, Entity: "client key", Msg: "cannot parse the public key", Err: err}
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < minRSABits || n > maxRSABits {
			return nil, "", "", nil, invalid("RSA key has %d bits; want %d to %d", n, minRSABits, maxRSABits)
		}
		alg = string(jose.RS256)
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, "", "", nil, invalid("EC key is on curve %s; only P-256 (ES256) is supported", k.Curve.Params().Name)
		}
		alg = string(jose.ES256)
	default:
		return nil, "", "", nil, invalid("unsupported key type %T; use RSA (RS256) or EC P-256 (ES256)", pub)
	}
	jwk := jose.JSONWebKey{Key: pub}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, "", "", nil, fmt.Errorf("key thumbprint: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, "", "", nil, fmt.Errorf("encode public key: %w", err)
	}
	return pub, alg, base64.RawURLEncoding.EncodeToString(tp),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// AddClientKey registers a public key (PEM) for the named principal and
// returns it with its kid and pinned algorithm.
func (s *Service) AddClientKey(ctx context.Context, name string, pemBytes []byte) (ClientKey, error) {
	_, alg, kid, pkix, err := ParsePublicKey(pemBytes)
	if err != nil {
		return ClientKey{}, err
	}
	p, err := s.store.PrincipalByName(ctx, name)
	if err != nil {
		return ClientKey{}, err
	}
	k := ClientKey{PrincipalID: p.ID, KID: kid, Alg: alg, PublicPEM: string(pkix), CreatedAt: s.now().UTC()}
	if err := s.store.AddClientKey(ctx, k); err != nil {
		return ClientKey{}, err
	}
	return k, nil
}

// ClientKeys returns the keys registered for the named principal.
func (s *Service) ClientKeys(ctx context.Context, name string) ([]ClientKey, error) {
	p, err := s.store.PrincipalByName(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.store.ClientKeys(ctx, p.ID)
}

// RemoveClientKey removes the key kid of the named principal.
func (s *Service) RemoveClientKey(ctx context.Context, name, kid string) error {
	p, err := s.store.PrincipalByName(ctx, name)
	if err != nil {
		return err
	}
	return s.store.DeleteClientKey(ctx, p.ID, kid)
}

// verificationKey parses a stored client key.
func verificationKey(k ClientKey) (crypto.PublicKey, error) {
	pub, alg, _, _, err := ParsePublicKey([]byte(k.PublicPEM))
	if err != nil {
		return nil, err
	}
	if alg != k.Alg {
		return nil, errors.New("stored algorithm does not match the key")
	}
	return pub, nil
}
