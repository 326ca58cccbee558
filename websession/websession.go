// Package websession defines the stored form of a web console session and
// the store that keeps the sessions of every node (store/sqlstore
// implements it on SQLite and PostgreSQL; Memory keeps one node's). A
// stored session holds nothing a reader of the store can act with: it is
// found by the hash of its cookie value, and its Floe token is sealed under
// a key only the cookie value gives (package console seals and opens it).
package websession

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/floe-lake/floe"
)

// Session is a stored console session.
type Session struct {
	// IDHash is the hex SHA-256 of the session's cookie value.
	IDHash string
	// Principal is the signed-in principal's name.
	Principal string
	// SealedToken is the session's Floe access token, sealed.
	SealedToken string
	// TokenID, ClientID and PrincipalID name the token for revocation.
	TokenID, ClientID, PrincipalID string
	// ExpiresAt is when the session (its token) expires.
	ExpiresAt time.Time
	// CreatedAt is when the session started.
	CreatedAt time.Time
}

// Store keeps console sessions. Implementations are safe for concurrent
// use.
type Store interface {
	// CreateConsoleSession stores s, keeping at most max sessions: it
	// first deletes the expired ones, then, while max are still held, the
	// one expiring first, and returns those (their tokens are to be
	// revoked). max <= 0 means no bound.
	CreateConsoleSession(ctx context.Context, s Session, max int) (evicted []Session, err error)
	// ConsoleSession returns the live session with idHash: a floe.NotFound
	// error when there is none or it expired.
	ConsoleSession(ctx context.Context, idHash string) (Session, error)
	// DeleteConsoleSession deletes the session with idHash and returns it;
	// a floe.NotFound error when there is none.
	DeleteConsoleSession(ctx context.Context, idHash string) (Session, error)
}

// ErrNoSession is the NotFound error of a missing or expired session.
var ErrNoSession = &floe.Error{Kind: floe.NotFound, Entity: "session", Msg: "no such console session"}

// Memory is a Store in one process's memory.
type Memory struct {
	now func() time.Time

	mu sync.Mutex
	m  map[string]Session
}

// NewMemory returns an empty Memory store with clock now (nil: time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, m: map[string]Session{}}
}

// CreateConsoleSession implements Store.
func (m *Memory) CreateConsoleSession(_ context.Context, s Session, max int) ([]Session, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, o := range m.m {
		if !now.Before(o.ExpiresAt) {
			delete(m.m, k)
		}
	}
	var evicted []Session
	if max > 0 && len(m.m) >= max {
		all := make([]Session, 0, len(m.m))
		for _, o := range m.m {
			all = append(all, o)
		}
		slices.SortFunc(all, func(a, b Session) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
		for _, o := range all[:len(m.m)-max+1] {
			delete(m.m, o.IDHash)
			evicted = append(evicted, o)
		}
	}
	m.m[s.IDHash] = s
	return evicted, nil
}

// ConsoleSession implements Store.
func (m *Memory) ConsoleSession(_ context.Context, idHash string) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[idHash]
	if !ok {
		return Session{}, ErrNoSession
	}
	if !m.now().Before(s.ExpiresAt) {
		delete(m.m, idHash)
		return Session{}, ErrNoSession
	}
	return s, nil
}

// DeleteConsoleSession implements Store.
func (m *Memory) DeleteConsoleSession(_ context.Context, idHash string) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[idHash]
	if !ok {
		return Session{}, ErrNoSession
	}
	delete(m.m, idHash)
	return s, nil
}

// Len is how many sessions m holds (live or not yet swept).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
