package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// DefaultMaxSessions bounds the sessions a Handler holds when
// Options.MaxSessions is unset.
const DefaultMaxSessions = 10000

// session is one signed-in browser: the Floe token it acts with and the
// CSRF token its state-changing requests must echo.
type session struct {
	token     string
	csrf      string
	principal string
	expires   time.Time
}

// sessions is a bounded store of sessions keyed by the SHA-256 of their
// cookie value (a stolen copy of the store's memory names no cookie). A
// session lives until its token expires; when the store is full, the
// session that expires first makes room (its token is handed back to be
// revoked). It is safe for concurrent use.
type sessions struct {
	max int
	now func() time.Time

	mu sync.Mutex
	m  map[[32]byte]*session
}

func newSessions(max int, now func() time.Time) *sessions {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &sessions{max: max, now: now, m: map[[32]byte]*session{}}
}

// newSecret returns 32 random bytes, URL-safe base64.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func key(id string) [32]byte { return sha256.Sum256([]byte(id)) }

// add stores s and returns the cookie value naming it, and the sessions
// evicted to make room (expired ones, or the one expiring first).
func (ss *sessions) add(s *session) (id string, evicted []*session) {
	id = newSecret()
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= ss.max {
		for k, o := range ss.m {
			if !now.Before(o.expires) {
				delete(ss.m, k)
			}
		}
	}
	for len(ss.m) >= ss.max {
		var first [32]byte
		var fs *session
		for k, o := range ss.m {
			if fs == nil || o.expires.Before(fs.expires) {
				first, fs = k, o
			}
		}
		delete(ss.m, first)
		evicted = append(evicted, fs)
	}
	ss.m[key(id)] = s
	return id, evicted
}

// get returns the live session named by the cookie value id.
func (ss *sessions) get(id string) (*session, bool) {
	if id == "" {
		return nil, false
	}
	k := key(id)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	if !ok {
		return nil, false
	}
	if !ss.now().Before(s.expires) {
		delete(ss.m, k)
		return nil, false
	}
	return s, true
}

// remove deletes the session named by id and returns it.
func (ss *sessions) remove(id string) (*session, bool) {
	k := key(id)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	delete(ss.m, k)
	return s, ok
}

// len is how many sessions are held (live or not yet swept).
func (ss *sessions) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

// csrfOK reports whether got is the session's CSRF token (in constant time).
func (s *session) csrfOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}
