// Package keywrap seals the secrets Floe keeps in its metadata store (token
// signing keys, credential sealing keys) under the warehouse key wrapper, so
// that a copy of the store alone yields nothing that signs or mints.
//
// Each secret is encrypted with AES-256-GCM under a fresh random 256-bit data
// key (DEK); the DEK is wrapped by an [sse.KeyWrapper] (a local key file, an
// environment variable, or AWS KMS). The associated data binds the secret's
// purpose and id and the header (wrapping key id and wrapped DEK), so a
// sealed blob copied onto another row, or relabelled with another key id,
// does not open.
//
// # Format (version 1)
//
//	magic     8  "floe-kw1"
//	k         1  length of the wrapping key id (1..255)
//	keyID     k  CurrentKeyID of the wrapper when sealed
//	w         2  big-endian length of the wrapped DEK (1..4096)
//	wrapped   w  the DEK as returned by KeyWrapper.Wrap
//	nonce    12  random
//	sealed    …  AES-256-GCM(DEK, nonce, secret, aad) (secret || 16-byte tag)
//
// aad = "floe keywrap v1\x00" || purpose || 0x00 || id || 0x00 || magic..wrapped.
//
// The purposes in use are auth.SealPurpose (token-signing private keys, id =
// kid) and vend.SealPurpose (credential-sealing keys, id = key id).
package keywrap

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/objstore/sse"
)

const (
	magic      = "floe-kw1"
	aadLabel   = "floe keywrap v1\x00"
	dekSize    = 32
	nonceSize  = 12
	maxWrapped = 4096
	// MaxSecret bounds a sealed secret (an RSA-4096 PKCS#8 PEM is ~3.3 KiB).
	MaxSecret = 16 << 10
)

// ErrNotSealed is returned by Open for a blob that is not in the sealed
// format: a plaintext secret written before keys were wrapped.
var ErrNotSealed = errors.New("keywrap: secret is not sealed")

// Sealer seals and opens secrets under a KeyWrapper. It is safe for
// concurrent use and holds no secret itself.
type Sealer struct {
	kw sse.KeyWrapper
}

// New returns a Sealer over kw.
func New(kw sse.KeyWrapper) *Sealer { return &Sealer{kw: kw} }

// Wrapper returns the KeyWrapper the Sealer uses.
func (s *Sealer) Wrapper() sse.KeyWrapper { return s.kw }

// IsSealed reports whether blob is in the sealed format (it does not check
// that it opens).
func IsSealed(blob []byte) bool {
	_, _, _, err := parse(blob)
	return err == nil
}

// KeyID returns the id of the wrapping key blob was sealed under.
func KeyID(blob []byte) (string, error) {
	h, _, _, err := parse(blob)
	if err != nil {
		return "", err
	}
	return h.keyID, nil
}

type header struct {
	keyID   string
	wrapped []byte
	raw     []byte // magic..wrapped
}

// parse splits blob into its header, nonce and sealed part.
func parse(blob []byte) (header, []byte, []byte, error) {
	var h header
	if !bytes.HasPrefix(blob, []byte(magic)) {
		return h, nil, nil, ErrNotSealed
	}
	rest := blob[len(magic):]
	if len(rest) < 1 {
		return h, nil, nil, fmt.Errorf("keywrap: truncated header: %w", sse.ErrCorrupt)
	}
	k := int(rest[0])
	rest = rest[1:]
	if k == 0 || len(rest) < k+2 {
		return h, nil, nil, fmt.Errorf("keywrap: truncated key id: %w", sse.ErrCorrupt)
	}
	h.keyID = string(rest[:k])
	w := int(binary.BigEndian.Uint16(rest[k:]))
	rest = rest[k+2:]
	if w == 0 || w > maxWrapped || len(rest) < w+nonceSize+16 {
		return h, nil, nil, fmt.Errorf("keywrap: truncated wrapped key: %w", sse.ErrCorrupt)
	}
	h.wrapped = rest[:w]
	rest = rest[w:]
	h.raw = blob[:len(blob)-len(rest)]
	return h, rest[:nonceSize], rest[nonceSize:], nil
}

func aad(purpose, id string, raw []byte) []byte {
	b := make([]byte, 0, len(aadLabel)+len(purpose)+len(id)+2+len(raw))
	b = append(b, aadLabel...)
	b = append(b, purpose...)
	b = append(b, 0)
	b = append(b, id...)
	b = append(b, 0)
	return append(b, raw...)
}

// Seal encrypts secret for (purpose, id) under a fresh DEK wrapped by the
// current warehouse key.
func (s *Sealer) Seal(ctx context.Context, purpose, id string, secret []byte) ([]byte, error) {
	if len(secret) == 0 || len(secret) > MaxSecret {
		return nil, floe.E(floe.Invalid, "secret", "secret %s/%s has %d bytes, want 1 to %d", purpose, id, len(secret), MaxSecret)
	}
	dek := make([]byte, dekSize)
	defer clear(dek)
	if _, err := rand.Read(dek); err != nil {
		return nil, fmt.Errorf("keywrap: %w", err)
	}
	keyID, wrapped, err := s.kw.Wrap(ctx, dek)
	if err != nil {
		return nil, fmt.Errorf("keywrap: wrap data key: %w", err)
	}
	if len(keyID) == 0 || len(keyID) > 255 || len(wrapped) == 0 || len(wrapped) > maxWrapped {
		return nil, fmt.Errorf("keywrap: key wrapper returned a key id of %d bytes and a wrapped key of %d bytes", len(keyID), len(wrapped))
	}
	aead, err := gcm(dek)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(magic)+1+len(keyID)+2+len(wrapped)+nonceSize+len(secret)+aead.Overhead())
	out = append(out, magic...)
	out = append(out, byte(len(keyID)))
	out = append(out, keyID...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(wrapped)))
	out = append(out, wrapped...)
	raw := len(out)
	out = append(out, make([]byte, nonceSize)...)
	nonce := out[raw:]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("keywrap: %w", err)
	}
	return aead.Seal(out, nonce, secret, aad(purpose, id, out[:raw])), nil
}

// Open decrypts a blob sealed by Seal for the same (purpose, id). A blob not
// in the sealed format yields ErrNotSealed; one that fails authentication
// (tampered, or sealed for another purpose or id) an error wrapping
// sse.ErrCorrupt; one wrapped by a key the wrapper does not hold an error
// wrapping sse.ErrUnknownKey.
func (s *Sealer) Open(ctx context.Context, purpose, id string, blob []byte) ([]byte, error) {
	h, nonce, sealed, err := parse(blob)
	if err != nil {
		return nil, err
	}
	dek, err := s.kw.Unwrap(ctx, h.keyID, h.wrapped)
	if err != nil {
		return nil, fmt.Errorf("keywrap: unwrap the data key of %s %s: %w", purpose, id, err)
	}
	defer clear(dek)
	if len(dek) != dekSize {
		return nil, fmt.Errorf("keywrap: data key of %s %s has %d bytes: %w", purpose, id, len(dek), sse.ErrCorrupt)
	}
	aead, err := gcm(dek)
	if err != nil {
		return nil, err
	}
	secret, err := aead.Open(nil, nonce, sealed, aad(purpose, id, h.raw))
	if err != nil {
		return nil, fmt.Errorf("keywrap: %s %s fails authentication: %w", purpose, id, sse.ErrCorrupt)
	}
	return secret, nil
}

// Rewrap returns blob sealed under the wrapper's current key: a plaintext
// secret (written before keys were wrapped) is sealed, a blob sealed under
// another key is opened and sealed again. changed is false, and blob is
// returned as is, when it is already sealed under the current key.
func (s *Sealer) Rewrap(ctx context.Context, purpose, id string, blob []byte) (out []byte, changed bool, err error) {
	keyID, err := KeyID(blob)
	switch {
	case errors.Is(err, ErrNotSealed):
		out, err = s.Seal(ctx, purpose, id, blob)
		return out, err == nil, err
	case err != nil:
		return nil, false, err
	case keyID == s.kw.CurrentKeyID():
		return blob, false, nil
	}
	secret, err := s.Open(ctx, purpose, id, blob)
	if err != nil {
		return nil, false, err
	}
	defer clear(secret)
	out, err = s.Seal(ctx, purpose, id, secret)
	return out, err == nil, err
}

func gcm(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("keywrap: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("keywrap: %w", err)
	}
	return aead, nil
}

// Record is one stored secret: its id and its blob (sealed, or plaintext in
// a store written before keys were wrapped).
type Record struct {
	ID   string
	Blob []byte
}

// Table is a store table of secrets of one purpose.
type Table interface {
	// Records returns every stored secret.
	Records(ctx context.Context) ([]Record, error)
	// Replace sets the blob of id to new if it is still old (compare and
	// swap, so that two nodes re-wrapping at once do not lose a key), and
	// reports whether it did.
	Replace(ctx context.Context, id string, old, new []byte) (bool, error)
}

// Result counts what RewrapAll did.
type Result struct {
	// Scanned is how many secrets were read.
	Scanned int
	// Sealed is how many plaintext secrets were sealed (migrated).
	Sealed int
	// Rewrapped is how many sealed secrets were re-wrapped under the
	// current key.
	Rewrapped int
}

// RewrapAll seals every plaintext secret of t and re-wraps every secret
// sealed under a key other than the wrapper's current one. Readers are never
// blocked: each row is replaced atomically, and a row changed meanwhile by
// another node is left to it.
func RewrapAll(ctx context.Context, s *Sealer, purpose string, t Table) (Result, error) {
	var res Result
	recs, err := t.Records(ctx)
	if err != nil {
		return res, fmt.Errorf("keywrap: list %s: %w", purpose, err)
	}
	for _, r := range recs {
		res.Scanned++
		plain := !IsSealed(r.Blob)
		out, changed, err := s.Rewrap(ctx, purpose, r.ID, r.Blob)
		if err != nil {
			return res, fmt.Errorf("keywrap: re-wrap %s %s: %w", purpose, r.ID, err)
		}
		if !changed {
			continue
		}
		ok, err := t.Replace(ctx, r.ID, r.Blob, out)
		if err != nil {
			return res, fmt.Errorf("keywrap: store %s %s: %w", purpose, r.ID, err)
		}
		if !ok {
			continue
		}
		if plain {
			res.Sealed++
		} else {
			res.Rewrapped++
		}
	}
	return res, nil
}
