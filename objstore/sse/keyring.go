package sse

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// KeyWrapper wraps and unwraps per-object data keys. [LocalKeyring] implements
// it; an AWS KMS implementation can be added later (see the package doc).
// Implementations must be safe for concurrent use.
type KeyWrapper interface {
	// Wrap encrypts dek under the current warehouse key; keyID names that key.
	Wrap(ctx context.Context, dek []byte) (keyID string, wrapped []byte, err error)
	// Unwrap decrypts a DEK wrapped by key keyID. An unknown key yields an
	// error wrapping ErrUnknownKey; wrapped data that fails authentication
	// yields an error wrapping ErrCorrupt. Any other error (a network failure
	// of a remote KMS, say) is passed through to the caller of Open or Rewrap.
	Unwrap(ctx context.Context, keyID string, wrapped []byte) ([]byte, error)
	// CurrentKeyID names the key new objects are wrapped with. It must equal
	// the keyID Wrap returns: Rewrap compares it with an object's key id to
	// decide whether there is anything to do.
	CurrentKeyID() string
}

// Sentinel errors; check them with errors.Is.
var (
	// ErrUnknownKey is returned when an object's DEK is wrapped by a warehouse
	// key the KeyWrapper does not hold.
	ErrUnknownKey = errors.New("sse: unknown warehouse key")
	// ErrCorrupt is returned when an encrypted object (or a wrapped key) fails
	// authentication or is malformed: bit flips, truncation, appended bytes,
	// reordered or foreign segments, an impossible size.
	ErrCorrupt = errors.New("sse: encrypted object is corrupt")
	// ErrNotEncrypted is returned by Open and Rewrap when the data does not
	// start with the header magic.
	ErrNotEncrypted = errors.New("sse: object is not encrypted")
)

const (
	// KeySize is the size of a warehouse key and of a data key, in bytes.
	KeySize = 32

	maxKeyringIDLen  = 64
	maxKeyFileSize   = 1 << 20
	defaultKeyID     = "default"
	keyringWrapV1    = 1
	keyringNonceSize = 12
	keyringAADLabel  = "floe-sse keyring v1\x00"
)

// LocalKeyring holds 256-bit warehouse keys by id; one of them is current. It
// is safe for concurrent use. Its String method names the key ids only; key
// material is never printed.
type LocalKeyring struct {
	aeads   map[string]cipher.AEAD
	ids     []string // file order; the last one is current
	current string
}

var _ KeyWrapper = (*LocalKeyring)(nil)

// ParseKeyring parses a key file. The format is one key per line,
// "<id> <base64 of 32 bytes>", with '#' comment lines and blank lines ignored;
// the LAST key listed is current. Ids match [A-Za-z0-9._-]{1,64} and must be
// unique. A file holding only a single bare base64 key is accepted too, with id
// "default". Errors name the line but never echo key material. ParseKeyring
// keeps no reference to data, so the caller may clear it afterwards.
func ParseKeyring(data []byte) (*LocalKeyring, error) {
	// Work on byte slices, never strings, so no copy of key material outlives
	// this call (the caller may clear data).
	type entry struct {
		line   int
		fields [][]byte
	}
	var entries []entry
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		entries = append(entries, entry{line: i + 1, fields: bytes.Fields(line)})
	}
	if len(entries) == 0 {
		return nil, errors.New("sse: key file holds no keys")
	}
	kr := &LocalKeyring{aeads: make(map[string]cipher.AEAD, len(entries))}
	if len(entries) == 1 && len(entries[0].fields) == 1 {
		if err := kr.add(defaultKeyID, entries[0].fields[0]); err != nil {
			return nil, fmt.Errorf("sse: key file line %d: %w", entries[0].line, err)
		}
		return kr, nil
	}
	for _, e := range entries {
		if len(e.fields) != 2 {
			return nil, fmt.Errorf("sse: key file line %d: want \"<id> <base64 key>\"", e.line)
		}
		if err := kr.add(string(e.fields[0]), e.fields[1]); err != nil {
			return nil, fmt.Errorf("sse: key file line %d: %w", e.line, err)
		}
	}
	return kr, nil
}

// add decodes and installs one key, making it current.
func (k *LocalKeyring) add(id string, b64 []byte) error {
	if !validKeyringID(id) {
		// Do not echo the id: a line with its fields swapped would print the key.
		return errors.New("key id must match [A-Za-z0-9._-]{1,64}")
	}
	if _, dup := k.aeads[id]; dup {
		return fmt.Errorf("duplicate key id %q", id)
	}
	key, err := decodeKey(b64)
	if err != nil {
		return err
	}
	defer clear(key)
	aead, err := newGCM(key)
	if err != nil {
		return err
	}
	k.aeads[id] = aead
	k.ids = append(k.ids, id)
	k.current = id
	return nil
}

// decodeKey decodes canonical standard base64, with or without padding, of
// exactly KeySize bytes.
func decodeKey(src []byte) ([]byte, error) {
	enc := base64.StdEncoding.Strict()
	if len(src)%4 != 0 {
		enc = base64.RawStdEncoding.Strict()
	}
	if enc.DecodedLen(len(src)) > 2*KeySize {
		return nil, errors.New("key is too long")
	}
	key := make([]byte, enc.DecodedLen(len(src)))
	n, err := enc.Decode(key, src)
	if err != nil {
		clear(key)
		return nil, errors.New("key is not valid base64")
	}
	if n != KeySize {
		clear(key)
		return nil, fmt.Errorf("key is %d bytes, want %d", n, KeySize)
	}
	return key[:n], nil
}

func validKeyringID(id string) bool {
	if len(id) == 0 || len(id) > maxKeyringIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// LoadKeyring reads and parses the key file at path (see ParseKeyring). It
// refuses a file that is not a regular file or whose permissions let group or
// others access it (mode & 0o077 != 0), and files over 1 MiB.
func LoadKeyring(path string) (*LocalKeyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sse: key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("sse: key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("sse: key file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("sse: key file %s has mode %04o, which lets group or others access it; run chmod 600 %s", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("sse: key file %s: %w", path, err)
	}
	defer clear(data)
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("sse: key file %s is larger than %d bytes", path, maxKeyFileSize)
	}
	kr, err := ParseKeyring(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return kr, nil
}

// GenerateKey returns the standard base64 encoding of KeySize random bytes,
// suitable as a line of a key file.
func GenerateKey() (string, error) {
	key := make([]byte, KeySize)
	defer clear(key)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("sse: generate key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(key), nil
}

// CurrentKeyID names the key new objects are wrapped with: the last in the file.
func (k *LocalKeyring) CurrentKeyID() string { return k.current }

// KeyIDs returns the ids of all keys in file order; the last is current.
func (k *LocalKeyring) KeyIDs() []string { return append([]string(nil), k.ids...) }

// String names the keys without revealing them.
func (k *LocalKeyring) String() string {
	return fmt.Sprintf("LocalKeyring{keys: %s, current: %s}", strings.Join(k.ids, ","), k.current)
}

// Wrap encrypts dek with AES-256-GCM under the current key. The result is
// version byte 1 || 12-byte random nonce || ciphertext || 16-byte tag, with
// associated data "floe-sse keyring v1\x00" || keyID, so a wrapped key cannot
// be relabelled with another key id. Random nonces keep a key safe for about
// 2^32 wraps; rotate well before that.
func (k *LocalKeyring) Wrap(_ context.Context, dek []byte) (string, []byte, error) {
	if len(dek) == 0 {
		return "", nil, errors.New("sse: wrap: empty data key")
	}
	aead := k.aeads[k.current]
	out := make([]byte, 1+keyringNonceSize, 1+keyringNonceSize+len(dek)+aead.Overhead())
	out[0] = keyringWrapV1
	if _, err := rand.Read(out[1:]); err != nil {
		return "", nil, fmt.Errorf("sse: wrap: %w", err)
	}
	out = aead.Seal(out, out[1:1+keyringNonceSize], dek, keyringAAD(k.current))
	return k.current, out, nil
}

// Unwrap decrypts a DEK wrapped by Wrap under key keyID. An id not in the
// keyring yields an error wrapping ErrUnknownKey; malformed or tampered input
// yields one wrapping ErrCorrupt.
func (k *LocalKeyring) Unwrap(_ context.Context, keyID string, wrapped []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("sse: warehouse key %q: %w", truncate(keyID, 80), ErrUnknownKey)
	}
	if len(wrapped) < 1+keyringNonceSize+aead.Overhead() || wrapped[0] != keyringWrapV1 {
		return nil, fmt.Errorf("sse: wrapped key is malformed: %w", ErrCorrupt)
	}
	nonce := wrapped[1 : 1+keyringNonceSize]
	dek, err := aead.Open(nil, nonce, wrapped[1+keyringNonceSize:], keyringAAD(keyID))
	if err != nil {
		return nil, fmt.Errorf("sse: wrapped key fails authentication under %q: %w", keyID, ErrCorrupt)
	}
	return dek, nil
}

func keyringAAD(keyID string) []byte {
	return append([]byte(keyringAADLabel), keyID...)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sse: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("sse: %w", err)
	}
	return aead, nil
}
