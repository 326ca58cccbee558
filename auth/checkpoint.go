package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/floe-lake/floe"
)

// SignAuditCheckpoint signs msg (an audit checkpoint, see package audit)
// with the current token-signing key and returns the key's id and the
// signature: ASN.1 ECDSA for ES256 keys, PKCS #1 v1.5 for RS256, over
// SHA-256 of msg. The audit package prefixes msg with a domain string that
// no JWT signing input can contain, so the two uses of the key never
// produce each other's signatures.
func (s *Service) SignAuditCheckpoint(ctx context.Context, msg []byte) (string, []byte, error) {
	if err := s.maybeReloadKeys(ctx); err != nil {
		return "", nil, err
	}
	k, kid := s.signingKey()
	if kid == "" {
		return "", nil, floe.E(floe.Internal, "auth", "no signing key")
	}
	digest := sha256.Sum256(msg)
	sig, err := k.priv.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		return "", nil, fmt.Errorf("auth: sign audit checkpoint: %w", err)
	}
	return kid, sig, nil
}

// VerifyAuditCheckpoint returns nil if sig is the signature of msg by the
// signing key kid (see SignAuditCheckpoint). A key that was retired and
// pruned no longer verifies: the audit pruner signs its checkpoint again
// with the current key while the old one is still kept.
func (s *Service) VerifyAuditCheckpoint(ctx context.Context, kid string, msg, sig []byte) error {
	if err := s.maybeReloadKeys(ctx); err != nil {
		return err
	}
	pub, _ := s.publicKey(ctx, kid)
	if pub == nil {
		return fmt.Errorf("no signing key %q", kid)
	}
	digest := sha256.Sum256(msg)
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		if !ecdsa.VerifyASN1(p, digest[:], sig) {
			return errors.New("bad signature")
		}
		return nil
	case *rsa.PublicKey:
		if err := rsa.VerifyPKCS1v15(p, crypto.SHA256, digest[:], sig); err != nil {
			return fmt.Errorf("bad signature: %w", err)
		}
		return nil
	}
	return fmt.Errorf("signing key %q has an unknown type %T", kid, pub)
}
