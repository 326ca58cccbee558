package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"
)

// secretCache remembers successful client secret checks for a short time,
// so that a client fetching tokens often does not pay argon2id (about 20 ms
// and 19 MiB per check, by design) every time.
//
// Why this keeps the guarantees the slow hash gives:
//   - The slow hash protects secrets if the database leaks. The cache lives
//     only in this process's memory, is keyed by HMAC-SHA256 under a random
//     key made at start and never stored, and holds no secret: an entry is
//     the HMAC of (client id, secret) and the stored hash it was checked
//     against.
//   - Only successes are cached: a wrong secret always costs a full argon2id
//     check, so online guessing is as slow as before (and rate limited by
//     package oauth).
//   - An entry counts only while the principal's stored hash is unchanged
//     (the principal is read from the store on every request), so a new
//     secret invalidates it at once; disabling is checked after the cache.
//   - Entries expire after the TTL and the cache is bounded.
type secretCache struct {
	ttl time.Duration
	now func() time.Time
	key [32]byte

	mu      sync.Mutex
	entries map[[32]byte]secretEntry
}

type secretEntry struct {
	hash  string // the stored secret hash the secret matched
	until time.Time
}

// maxSecretEntries bounds the cache; when full, expired entries are
// dropped, and if none expired the cache starts over.
const maxSecretEntries = 10000

func newSecretCache(ttl time.Duration, now func() time.Time) *secretCache {
	c := &secretCache{ttl: ttl, now: now, entries: map[[32]byte]secretEntry{}}
	if _, err := rand.Read(c.key[:]); err != nil {
		panic("crypto/rand: " + err.Error()) // the OS RNG failing is unrecoverable
	}
	return c
}

func (c *secretCache) mac(clientID, secret string) [32]byte {
	m := hmac.New(sha256.New, c.key[:])
	m.Write([]byte(clientID))
	m.Write([]byte{0})
	m.Write([]byte(secret))
	var out [32]byte
	m.Sum(out[:0])
	return out
}

// check reports whether (clientID, secret) matched storedHash recently.
func (c *secretCache) check(clientID, secret, storedHash string) bool {
	if c.ttl <= 0 {
		return false
	}
	k := c.mac(clientID, secret)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return false
	}
	if !c.now().Before(e.until) || !hmac.Equal([]byte(e.hash), []byte(storedHash)) {
		delete(c.entries, k)
		return false
	}
	return true
}

// add remembers that (clientID, secret) matched storedHash.
func (c *secretCache) add(clientID, secret, storedHash string) {
	if c.ttl <= 0 {
		return
	}
	k := c.mac(clientID, secret)
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxSecretEntries {
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxSecretEntries {
			clear(c.entries)
		}
	}
	c.entries[k] = secretEntry{hash: storedHash, until: now.Add(c.ttl)}
}
