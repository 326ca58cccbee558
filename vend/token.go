package vend

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/floe-lake/floe"
)

// MaxTokenLen bounds an embedded session token: Mint refuses sessions whose
// token would be longer, Resolve rejects longer tokens unread.
const MaxTokenLen = 16 << 10

const (
	// tokenPrefix starts every embedded session token; it names the format.
	tokenPrefix = "FV1."
	// maxKeyIDLen bounds a key id (its length is one byte in the token).
	maxKeyIDLen = 64
	// nonceLen is the AES-GCM nonce length.
	nonceLen = 12
	// secretLen is how many bytes of the HMAC make the secret access key:
	// 30 bytes are 40 base64 characters without padding.
	secretLen = 30
	// accessKeyPrefix starts every embedded access key id.
	accessKeyPrefix = "FLOE"
)

// b64 decodes tokens strictly: a token has exactly one encoding, so that no
// altered token opens.
var b64 = base64.RawURLEncoding.Strict()

// wireSession is a Session as sealed in a token, with short field names.
type wireSession struct {
	ID          string      `json:"i"`
	AccessKeyID string      `json:"k"`
	Principal   string      `json:"p,omitempty"`
	PrincipalID string      `json:"u,omitempty"`
	TokenID     string      `json:"j,omitempty"`
	Table       string      `json:"t,omitempty"`
	Grants      []wireGrant `json:"g"`
	Expires     int64       `json:"e"` // Unix seconds
	Epoch       int64       `json:"v,omitempty"`
	// Networks is Session.AllowedCIDRs (allowlists; absent when empty).
	Networks []string `json:"n,omitempty"`
	// Notice is Session.Notice (absent when empty).
	Notice string `json:"o,omitempty"`
	// Files is the digest set of Session.Files (read-files credentials).
	Files *wireFiles `json:"f,omitempty"`
}

type wireGrant struct {
	Bucket string `json:"b"`
	Prefix string `json:"p"`
	Access Access `json:"a"`
}

func toWire(s Session) wireSession {
	w := wireSession{ID: s.ID, AccessKeyID: s.AccessKeyID, Principal: s.Principal, PrincipalID: s.PrincipalID,
		TokenID: s.TokenID, Table: s.Table, Grants: make([]wireGrant, len(s.Grants)), Expires: s.Expires.Unix(), Epoch: s.Epoch,
		Networks: s.AllowedCIDRs, Notice: s.Notice}
	for i, g := range s.Grants {
		w.Grants[i] = wireGrant(g)
	}
	if len(s.Files) > 0 {
		fs := newFileSet(s.filesBucket(), s.Files)
		w.Files = &wireFiles{Salt: fs.salt, Digests: fs.digests}
	}
	return w
}

func (w wireSession) session() Session {
	s := Session{ID: w.ID, AccessKeyID: w.AccessKeyID, Principal: w.Principal, PrincipalID: w.PrincipalID,
		TokenID: w.TokenID, Table: w.Table, Grants: make([]Grant, len(w.Grants)), Expires: time.Unix(w.Expires, 0).UTC(), Epoch: w.Epoch,
		AllowedCIDRs: w.Networks, Notice: w.Notice}
	for i, g := range w.Grants {
		s.Grants[i] = Grant(g)
	}
	if w.Files != nil {
		s.files = &fileSet{salt: w.Files.Salt, digests: w.Files.Digests}
	}
	return s
}

// seal returns the session token of s under k.
func (k *sealKey) seal(s Session) (string, error) {
	w := toWire(s)
	var digests []byte
	if w.Files != nil {
		// The digests follow the JSON as raw bytes: base64 inside the
		// token's own base64 would cost a third more.
		digests, w.Files.Digests = w.Files.Digests, nil
	}
	pt, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("vend: encode session: %w", err)
	}
	pt = append(pt, digests...)
	hdr := 1 + len(k.id)
	raw := make([]byte, hdr+nonceLen, hdr+nonceLen+len(pt)+k.aead.Overhead())
	raw[0] = byte(len(k.id))
	copy(raw[1:], k.id)
	nonce := raw[hdr:]
	rand.Read(nonce)
	raw = k.aead.Seal(raw, nonce, pt, aad(raw[:hdr]))
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	if len(token) > MaxTokenLen {
		return "", floe.E(floe.Invalid, "credential", "the credential's session is too large (%d bytes of token, at most %d)", len(token), MaxTokenLen)
	}
	return token, nil
}

// aad is the additional authenticated data of a token whose raw bytes start
// with hdr (the key id and its length).
func aad(hdr []byte) []byte {
	return append([]byte(tokenPrefix), hdr...)
}

// parsedToken is a session token split into its parts, not yet opened.
type parsedToken struct {
	keyID string
	raw   []byte
}

// parseToken splits a session token without opening it. It fails with
// ErrInvalidToken.
func parseToken(token string) (parsedToken, error) {
	if len(token) > MaxTokenLen {
		return parsedToken{}, fmt.Errorf("vend: session token of %d bytes: %w", len(token), ErrInvalidToken)
	}
	enc, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return parsedToken{}, fmt.Errorf("vend: session token is not in format %s: %w", tokenPrefix, ErrInvalidToken)
	}
	raw, err := b64.DecodeString(enc)
	if err != nil {
		return parsedToken{}, fmt.Errorf("vend: session token: %w: %w", ErrInvalidToken, err)
	}
	if len(raw) == 0 {
		return parsedToken{}, fmt.Errorf("vend: empty session token: %w", ErrInvalidToken)
	}
	n := int(raw[0])
	if n == 0 || n > maxKeyIDLen || len(raw) < 1+n+nonceLen+16 {
		return parsedToken{}, fmt.Errorf("vend: session token is truncated: %w", ErrInvalidToken)
	}
	id := raw[1 : 1+n]
	for _, c := range id {
		if c <= ' ' || c > '~' {
			return parsedToken{}, fmt.Errorf("vend: session token has a malformed key id: %w", ErrInvalidToken)
		}
	}
	return parsedToken{keyID: string(id), raw: raw}, nil
}

// open authenticates and decrypts a parsed token sealed under k.
func (k *sealKey) open(p parsedToken) (Session, error) {
	hdr := 1 + len(k.id)
	nonce := p.raw[hdr : hdr+nonceLen]
	pt, err := k.aead.Open(nil, nonce, p.raw[hdr+nonceLen:], aad(p.raw[:hdr]))
	if err != nil {
		return Session{}, fmt.Errorf("vend: session token does not authenticate under key %s: %w", k.id, ErrInvalidToken)
	}
	var w wireSession
	dec := json.NewDecoder(bytes.NewReader(pt))
	if err := dec.Decode(&w); err != nil {
		return Session{}, fmt.Errorf("vend: session token under key %s: %w: %w", k.id, ErrInvalidToken, err)
	}
	// After the JSON: a read-files session's file digests, nothing else.
	if rest := pt[dec.InputOffset():]; len(rest) > 0 || w.Files != nil {
		if w.Files == nil || len(w.Files.Digests) > 0 || len(rest)%fileDigestLen != 0 {
			return Session{}, fmt.Errorf("vend: session token under key %s has malformed file digests: %w", k.id, ErrInvalidToken)
		}
		w.Files.Digests = rest
	}
	return w.session(), nil
}

// secret derives the secret access key of a session token sealed under k.
func (k *sealKey) secret(token string) string {
	h := hmac.New(sha256.New, k.mac)
	h.Write([]byte(token))
	var sum [sha256.Size]byte
	return base64.StdEncoding.EncodeToString(h.Sum(sum[:0])[:secretLen])
}

// newAccessKeyID returns a random access key id: "FLOE" and 16 characters
// of [A-Z2-7] (80 random bits).
func newAccessKeyID() string {
	var b [10]byte
	rand.Read(b[:])
	return accessKeyPrefix + base32.StdEncoding.EncodeToString(b[:])
}
