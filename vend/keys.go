package vend

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"time"
)

// KeySize is the length in bytes of a Key's secret.
const KeySize = 32

// MaxStoredSecret bounds a key's secret as stored (sealed).
const MaxStoredSecret = 16 << 10

// SealPurpose names the credential-sealing keys to the Sealer; it is bound
// into each sealed key, with its id.
const SealPurpose = "vend.sealing-key"

// maxKeys bounds how many keys the embedded minter holds in memory: keys
// are rotated weekly and deleted after MaxTTL, so a store holds two or three;
// beyond maxKeys only the newest are loaded.
const maxKeys = 32

// Key is a sealing key of the embedded minter: a KeySize-byte secret with an
// id. Every Floe node sharing a store uses the same keys. In the KeyStore,
// Secret is the secret sealed by EmbeddedOptions.Sealer (the plain KeySize
// bytes only when no Sealer is configured).
type Key struct {
	ID      string
	Secret  []byte
	Created time.Time
}

// Sealer seals the keys' secrets at rest (see internal/keywrap), so that the
// KeyStore holds nothing that mints credentials by itself.
type Sealer interface {
	// Seal encrypts secret for (purpose, id).
	Seal(ctx context.Context, purpose, id string, secret []byte) ([]byte, error)
	// Open decrypts a blob sealed for (purpose, id).
	Open(ctx context.Context, purpose, id string, blob []byte) ([]byte, error)
}

// KeyStore persists the embedded minter's keys, shared by all Floe nodes
// through the metadata store.
type KeyStore interface {
	// VendKeys returns all keys, newest (by Created) first.
	VendKeys(ctx context.Context) ([]Key, error)
	// AddVendKey stores a new key. It fails with a floe.AlreadyExists error
	// if a key with that id exists.
	AddVendKey(ctx context.Context, k Key) error
	// DeleteVendKeysBefore removes the keys created before t, never the
	// newest key, and returns how many it removed.
	DeleteVendKeysBefore(ctx context.Context, t time.Time) (int, error)
}

// HKDF info strings of the keys derived from a Key's secret.
const (
	sealInfo = "floe vend v1 token sealing key"
	macInfo  = "floe vend v1 secret access key"
)

// sealKey is a Key ready for use: its derived AES-256-GCM cipher and HMAC
// key. It is immutable and safe for concurrent use.
type sealKey struct {
	id      string
	created time.Time
	aead    cipher.AEAD
	mac     []byte
}

// newSealKey derives the sealing and MAC keys of k.
func newSealKey(k Key) (*sealKey, error) {
	if k.ID == "" || len(k.ID) > maxKeyIDLen {
		return nil, fmt.Errorf("vend key id %q: must have 1 to %d bytes", k.ID, maxKeyIDLen)
	}
	if len(k.Secret) != KeySize {
		return nil, fmt.Errorf("vend key %s: secret has %d bytes, want %d", k.ID, len(k.Secret), KeySize)
	}
	seal, err := hkdf.Key(sha256.New, k.Secret, nil, sealInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("vend key %s: derive sealing key: %w", k.ID, err)
	}
	mac, err := hkdf.Key(sha256.New, k.Secret, nil, macInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("vend key %s: derive MAC key: %w", k.ID, err)
	}
	block, err := aes.NewCipher(seal)
	if err != nil {
		return nil, fmt.Errorf("vend key %s: %w", k.ID, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("vend key %s: %w", k.ID, err)
	}
	return &sealKey{id: k.ID, created: k.Created, aead: aead, mac: mac}, nil
}
