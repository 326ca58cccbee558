package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/websession"
)

// DefaultMaxSessions bounds the sessions held (across every node sharing
// the store) when Options.MaxSessions is unset.
const DefaultMaxSessions = 10000

// session is one signed-in browser: the Floe token it acts with and the
// CSRF token its state-changing requests must echo.
type session struct {
	token     string
	csrf      string
	principal string
	expires   time.Time
	// ref names the token for revocation.
	ref auth.TokenInfo
}

// sessions keeps sessions in a websession.Store (the metadata store, so
// that every node sees every session at once). From the cookie value id,
// which only the browser holds, come three independent values: the key
// the row is found by (SHA-256 of id), the key that seals the token
// (HMAC-SHA256(id, "floe console token seal")) and the CSRF token
// (HMAC-SHA256(id, "floe console csrf")). A reader of the store thus finds
// no cookie, no usable token and no CSRF token in it.
type sessions struct {
	store websession.Store
	max   int
	now   func() time.Time
}

func newSessions(store websession.Store, max int, now func() time.Time) *sessions {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if store == nil {
		store = websession.NewMemory(now)
	}
	return &sessions{store: store, max: max, now: now}
}

// newSecret returns 32 random bytes, URL-safe base64.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// SessionKey is the key the session named by the cookie value id is
// stored under (websession.Session.IDHash): the hex SHA-256 of id.
func SessionKey(id string) string { return lookupKey(id) }

// lookupKey is the stored key of the session named by cookie value id.
func lookupKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

func derive(id, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(id))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// csrfOf is the CSRF token of the session named by id.
func csrfOf(id string) string {
	return base64.RawURLEncoding.EncodeToString(derive(id, "floe console csrf"))
}

func aead(id string) cipher.AEAD {
	b, err := aes.NewCipher(derive(id, "floe console token seal"))
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

// seal encrypts token under id's key, bound to the row's key.
func seal(id, token string) string {
	g := aead(id)
	nonce := make([]byte, g.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawStdEncoding.EncodeToString(g.Seal(nonce, nonce, []byte(token), []byte(lookupKey(id))))
}

// unseal decrypts a sealed token with id's key.
func unseal(id, sealed string) (string, error) {
	b, err := base64.RawStdEncoding.DecodeString(sealed)
	g := aead(id)
	if err != nil || len(b) < g.NonceSize() {
		return "", errors.New("console: malformed sealed token")
	}
	out, err := g.Open(nil, b[:g.NonceSize()], b[g.NonceSize():], []byte(lookupKey(id)))
	if err != nil {
		return "", fmt.Errorf("console: sealed token: %w", err)
	}
	return string(out), nil
}

// add stores s under a new cookie value, which it returns with the
// sessions evicted to make room (their tokens are to be revoked); s.csrf
// is set.
func (ss *sessions) add(ctx context.Context, s *session) (id string, evicted []websession.Session, err error) {
	id = newSecret()
	s.csrf = csrfOf(id)
	evicted, err = ss.store.CreateConsoleSession(ctx, websession.Session{IDHash: lookupKey(id), Principal: s.principal,
		SealedToken: seal(id, s.token), TokenID: s.ref.TokenID, ClientID: s.ref.ClientID, PrincipalID: s.ref.PrincipalID,
		ExpiresAt: s.expires, CreatedAt: ss.now()}, ss.max)
	if err != nil {
		return "", nil, err
	}
	return id, evicted, nil
}

// fromStored is the session of a stored row named by id.
func fromStored(id string, st websession.Session) (*session, error) {
	tok, err := unseal(id, st.SealedToken)
	if err != nil {
		return nil, err
	}
	return &session{token: tok, csrf: csrfOf(id), principal: st.Principal, expires: st.ExpiresAt, ref: refOf(st)}, nil
}

// refOf names a stored session's token for revocation.
func refOf(st websession.Session) auth.TokenInfo {
	return auth.TokenInfo{TokenID: st.TokenID, ClientID: st.ClientID, PrincipalID: st.PrincipalID, ExpiresAt: st.ExpiresAt}
}

// get returns the live session named by the cookie value id; ok is false
// when there is none. err is a failure of the store.
func (ss *sessions) get(ctx context.Context, id string) (s *session, ok bool, err error) {
	if id == "" {
		return nil, false, nil
	}
	st, err := ss.store.ConsoleSession(ctx, lookupKey(id))
	if floe.KindOf(err) == floe.NotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !ss.now().Before(st.ExpiresAt) {
		return nil, false, nil
	}
	s, err = fromStored(id, st)
	if err != nil {
		return nil, false, nil // not the key it was sealed with: not this session
	}
	return s, true, nil
}

// remove deletes the session named by id and returns it.
func (ss *sessions) remove(ctx context.Context, id string) (*session, bool, error) {
	st, err := ss.store.DeleteConsoleSession(ctx, lookupKey(id))
	if floe.KindOf(err) == floe.NotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	s, err := fromStored(id, st)
	if err != nil {
		return nil, false, nil
	}
	return s, true, nil
}

// csrfOK reports whether got is the session's CSRF token (in constant time).
func (s *session) csrfOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}
