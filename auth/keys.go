package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// Signing algorithms of Floe's own keys.
const (
	// AlgES256 is ECDSA P-256 with SHA-256: the default, as signing is ~50x
	// faster than RSA-2048 (token issuance is bound by it).
	AlgES256 = "ES256"
	// AlgRS256 is RSA-2048 with SHA-256.
	AlgRS256 = "RS256"
)

// signer is a parsed signing key and its algorithm.
type signer struct {
	priv crypto.Signer
	alg  string
}

func (k signer) method() jwt.SigningMethod { return jwt.GetSigningMethod(k.alg) }

// keyring holds Floe's signing keys as loaded from the store, newest
// (current) first.
type keyring struct {
	refresh time.Duration

	mu     sync.RWMutex
	keys   map[string]signer
	order  []SigningKey // newest first; PrivatePEM dropped
	loaded time.Time    // when the store was last read
	// missAt throttles reloads triggered by unknown key ids.
	missAt time.Time
}

// signingKey returns the current key and its id.
func (s *Service) signingKey() (signer, string) {
	s.keys.mu.RLock()
	defer s.keys.mu.RUnlock()
	if len(s.keys.order) == 0 {
		return signer{}, ""
	}
	kid := s.keys.order[0].KID
	return s.keys.keys[kid], kid
}

// publicKey returns the public key with id kid. An unknown kid makes the
// keys reload from the store (at most once a second), so that a key
// rotated on another node verifies here too.
func (s *Service) publicKey(ctx context.Context, kid string) (crypto.PublicKey, string) {
	s.keys.mu.RLock()
	k, ok := s.keys.keys[kid]
	s.keys.mu.RUnlock()
	if ok {
		return k.priv.Public(), k.alg
	}
	s.keys.mu.Lock()
	now := s.now()
	retry := now.Sub(s.keys.missAt) >= time.Second
	if retry {
		s.keys.missAt = now
	}
	s.keys.mu.Unlock()
	if !retry || kid == "" || len(kid) > 128 {
		return nil, ""
	}
	if err := s.reloadKeys(ctx); err != nil {
		s.log.WarnContext(ctx, "auth: reloading signing keys failed", "err", err)
		return nil, ""
	}
	s.keys.mu.RLock()
	defer s.keys.mu.RUnlock()
	if k, ok := s.keys.keys[kid]; ok {
		return k.priv.Public(), k.alg
	}
	return nil, ""
}

// maybeReloadKeys reloads the keys if they were read longer than the
// refresh interval ago.
func (s *Service) maybeReloadKeys(ctx context.Context) error {
	s.keys.mu.RLock()
	stale := s.now().Sub(s.keys.loaded) >= s.keys.refresh
	s.keys.mu.RUnlock()
	if !stale {
		return nil
	}
	return s.reloadKeys(ctx)
}

// reloadKeys reads the signing keys from the store, parsing only new ones,
// and prunes the retired keys no live token can be signed with.
func (s *Service) reloadKeys(ctx context.Context) error {
	stored, err := s.store.SigningKeys(ctx)
	if err != nil {
		return fmt.Errorf("load signing keys: %w", err)
	}
	s.keys.mu.RLock()
	have := s.keys.keys
	s.keys.mu.RUnlock()
	if len(stored) > maxSigningKeys {
		s.log.WarnContext(ctx, "auth: the store holds more signing keys than are loaded; using the newest", "stored", len(stored), "loaded", maxSigningKeys)
		stored = stored[:maxSigningKeys]
	}
	keys := make(map[string]signer, len(stored))
	order := make([]SigningKey, 0, len(stored))
	for _, k := range stored {
		pk, ok := have[k.KID]
		if !ok {
			// Only keys not loaded yet are unsealed: once per node, never
			// per request.
			if pk, err = s.openSigningKey(ctx, k); err != nil {
				return err
			}
		}
		keys[k.KID] = pk
		order = append(order, SigningKey{KID: k.KID, CreatedAt: k.CreatedAt})
	}
	s.keys.mu.Lock()
	s.keys.keys, s.keys.order, s.keys.loaded = keys, order, s.now()
	s.keys.mu.Unlock()
	return s.prune(ctx, order)
}

// maxSigningKeys bounds the signing keys held in memory: retired keys are
// pruned after the token lifetime, so a store holds one or two; beyond
// maxSigningKeys only the newest are loaded.
const maxSigningKeys = 32

// openSigningKey unseals (when a Sealer is configured) and parses a stored key.
func (s *Service) openSigningKey(ctx context.Context, k SigningKey) (signer, error) {
	if s.sealer == nil {
		return parseSigningKey(k)
	}
	pemBytes, err := s.sealer.Open(ctx, SealPurpose, k.KID, k.PrivatePEM)
	if err != nil {
		return signer{}, fmt.Errorf("signing key %s: %w", k.KID, err)
	}
	defer clear(pemBytes)
	k.PrivatePEM = pemBytes
	return parseSigningKey(k)
}

func parseSigningKey(k SigningKey) (signer, error) {
	blk, _ := pem.Decode(k.PrivatePEM)
	if blk == nil {
		return signer{}, fmt.Errorf("signing key %s: not PEM", k.KID)
	}
	pk, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return signer{}, fmt.Errorf("signing key %s: %w", k.KID, err)
	}
	switch key := pk.(type) {
	case *rsa.PrivateKey:
		return signer{priv: key, alg: AlgRS256}, nil
	case *ecdsa.PrivateKey:
		if key.Curve == elliptic.P256() {
			return signer{priv: key, alg: AlgES256}, nil
		}
	}
	return signer{}, fmt.Errorf("signing key %s: not RSA or EC P-256", k.KID)
}

// retention is how long a key stays after a newer one became current: every
// node picks the new key up within the refresh interval, and tokens signed
// before then expire within the TTL.
func (s *Service) retention() time.Duration {
	return s.keys.refresh + s.ttl + Leeway + time.Minute
}

// prune deletes the keys (newest first in order) that were superseded
// longer than the retention ago.
func (s *Service) prune(ctx context.Context, order []SigningKey) error {
	now := s.now()
	var drop []string
	for i := 1; i < len(order); i++ {
		if now.Sub(order[i-1].CreatedAt) > s.retention() {
			drop = append(drop, order[i].KID)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	for _, kid := range drop {
		if err := s.store.DeleteSigningKey(ctx, kid); err != nil {
			return fmt.Errorf("prune signing key %s: %w", kid, err)
		}
		s.log.InfoContext(ctx, "auth: pruned retired signing key", "kid", kid)
	}
	s.keys.mu.Lock()
	defer s.keys.mu.Unlock()
	kept := s.keys.order[:0:0]
	for _, k := range s.keys.order {
		if !slices.Contains(drop, k.KID) {
			kept = append(kept, k)
		}
	}
	for _, kid := range drop {
		delete(s.keys.keys, kid)
	}
	s.keys.order = kept
	return nil
}

// RotateKey creates a new signing key and makes it current. Older keys stay
// published in the JWKS and keep verifying until every token they signed
// has expired; then they are pruned. It returns the new key id.
func (s *Service) RotateKey(ctx context.Context) (string, error) {
	var k crypto.Signer
	var err error
	if s.alg == AlgRS256 {
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		return "", fmt.Errorf("generate signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", fmt.Errorf("encode signing key: %w", err)
	}
	kid := uuid.NewString()
	// A new key must sort first: never give it a creation time before the
	// current key's (clocks of nodes may differ slightly).
	at := s.now().UTC()
	s.keys.mu.RLock()
	if len(s.keys.order) > 0 && !at.After(s.keys.order[0].CreatedAt) {
		at = s.keys.order[0].CreatedAt.Add(time.Microsecond)
	}
	s.keys.mu.RUnlock()
	sk := SigningKey{KID: kid, PrivatePEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), CreatedAt: at}
	clear(der)
	if s.sealer != nil {
		sealed, err := s.sealer.Seal(ctx, SealPurpose, kid, sk.PrivatePEM)
		clear(sk.PrivatePEM)
		if err != nil {
			return "", fmt.Errorf("seal signing key: %w", err)
		}
		sk.PrivatePEM = sealed
	}
	if err := s.store.AddSigningKey(ctx, sk); err != nil {
		return "", fmt.Errorf("store signing key: %w", err)
	}
	if err := s.reloadKeys(ctx); err != nil {
		return "", err
	}
	s.log.InfoContext(ctx, "auth: rotated signing key", "kid", kid)
	return kid, nil
}

// JWKS returns the public signing keys as a JSON Web Key Set (RFC 7517),
// current key first, reloading them from the store when stale.
func (s *Service) JWKS(ctx context.Context) (jose.JSONWebKeySet, error) {
	if err := s.maybeReloadKeys(ctx); err != nil {
		return jose.JSONWebKeySet{}, err
	}
	s.keys.mu.RLock()
	defer s.keys.mu.RUnlock()
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(s.keys.order))}
	for _, k := range s.keys.order {
		sk := s.keys.keys[k.KID]
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: sk.priv.Public(), KeyID: k.KID, Algorithm: sk.alg, Use: "sig"})
	}
	return set, nil
}
