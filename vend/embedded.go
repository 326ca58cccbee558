package vend

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

var (
	_ Minter = (*Embedded)(nil)
	_ Minter = (*STS)(nil)
)

// DefaultKeyRotation is how long the embedded minter seals with a key before
// it creates a new one, when EmbeddedOptions.KeyRotation is zero.
const DefaultKeyRotation = 7 * 24 * time.Hour

// keyLeeway is added to how long a key is kept after its last credential
// can have expired, for clock skew between nodes.
const keyLeeway = 5 * time.Minute

// retryInterval throttles reloads of the keys on unknown key ids and
// retries of a failed rotation.
const retryInterval = time.Second

// keyIDLayout formats the id of a key from the start of its rotation period.
const keyIDLayout = "20060102T150405Z"

// EmbeddedOptions configures an Embedded minter. Zero values mean defaults.
type EmbeddedOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// KeyRotation is how long a sealing key is used to mint (default 7
	// days): a new key is created when the newest is older, and keys created
	// more than KeyRotation + MaxTTL ago are deleted.
	KeyRotation time.Duration
	// Sealer seals the keys in the KeyStore. Nil stores them in plaintext
	// (tests only: then a copy of the store mints credentials).
	Sealer Sealer
	// Epoch, if set, returns the revocation version to stamp on each
	// credential minted (revoke.List.Version).
	Epoch func() int64
}

// Embedded mints and resolves credentials for Floe's own S3 endpoint (see
// the package documentation for the token format). It is safe for
// concurrent use.
type Embedded struct {
	ks       KeyStore
	sealer   Sealer
	now      func() time.Time
	log      *slog.Logger
	rotation time.Duration
	epoch    func() int64

	mu      sync.RWMutex
	keys    map[string]*sealKey
	current *sealKey // the newest key

	// refresh serialises reloads and rotations; it guards the fields below.
	refresh sync.Mutex
	// missReload is when an unknown key id last made the keys reload.
	missReload time.Time
	// rotateFailed is when a rotation last failed.
	rotateFailed time.Time
}

// NewEmbedded returns an embedded minter on the keys of ks. It loads them and
// creates the first key, or a new one if the newest is due for rotation.
// Nodes starting at once on one store agree on the key: its id is derived
// from the rotation period, and a node that finds the id taken reloads.
func NewEmbedded(ctx context.Context, ks KeyStore, o EmbeddedOptions) (*Embedded, error) {
	if ks == nil {
		return nil, errors.New("vend: NewEmbedded needs a KeyStore")
	}
	if o.KeyRotation < 0 {
		return nil, fmt.Errorf("vend: negative key rotation %s", o.KeyRotation)
	}
	e := &Embedded{ks: ks, sealer: o.Sealer, now: o.Now, log: o.Logger, rotation: o.KeyRotation, epoch: o.Epoch, keys: map[string]*sealKey{}}
	if e.now == nil {
		e.now = time.Now
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.rotation == 0 {
		e.rotation = DefaultKeyRotation
	}
	e.refresh.Lock()
	defer e.refresh.Unlock()
	if err := e.rotateLocked(ctx); err != nil {
		if e.currentKey() == nil {
			return nil, err
		}
		e.rotateFailed = e.now()
		e.log.WarnContext(ctx, "vend: rotating the sealing key failed; minting with the old one", "key", e.currentKey().id, "err", err)
	}
	return e, nil
}

// Mint mints credentials for s on the newest key, rotating it first if it is
// due. It fills in s.ID, s.AccessKeyID, s.Epoch and s.Expires (now +
// ClampTTL(ttl), truncated to the second, and never after the key's
// deletion) and returns
// the completed session. It fails with floe.Invalid if s has no grant or an
// invalid one (see Grant.Validate), or if its token would exceed
// MaxTokenLen.
func (e *Embedded) Mint(ctx context.Context, s Session, ttl time.Duration) (Credentials, Session, error) {
	if err := s.validate(); err != nil {
		return Credentials{}, Session{}, err
	}
	k, err := e.sealingKey(ctx)
	if err != nil {
		return Credentials{}, Session{}, err
	}
	now := e.now()
	exp := now.Add(ClampTTL(ttl))
	if life := k.created.Add(e.rotation + MaxTTL); exp.After(life) {
		exp = life
	}
	exp = exp.UTC().Truncate(time.Second)
	if !exp.After(now) {
		return Credentials{}, Session{}, floe.E(floe.Unavailable, "credential",
			"cannot vend credentials: the sealing key %s has expired and no new one could be created", k.id)
	}
	s.ID = uuid.NewString()
	s.AccessKeyID = newAccessKeyID()
	switch {
	case s.EpochSet:
	case e.epoch != nil:
		s.Epoch = e.epoch()
	default:
		s.Epoch = 0
	}
	s.Expires = exp
	s.Grants = slices.Clone(s.Grants)
	token, err := k.seal(s)
	if err != nil {
		return Credentials{}, Session{}, err
	}
	return Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: k.secret(token), SessionToken: token, Expires: exp}, s, nil
}

// Resolve checks a credential presented to the S3 endpoint and returns its
// session and secret access key. Its errors wrap ErrUnknownAccessKey (no
// session token, or an access key id Floe never vends), ErrInvalidToken or
// ErrExpired. A token sealed under a key this node does not know makes it
// reload the keys from the store (at most once a second) before failing:
// the key may be new on another node.
func (e *Embedded) Resolve(ctx context.Context, accessKeyID, sessionToken string) (Session, string, error) {
	if sessionToken == "" {
		return Session{}, "", fmt.Errorf("vend: access key id came without a session token: %w", ErrUnknownAccessKey)
	}
	if !validAccessKeyID(accessKeyID) {
		return Session{}, "", fmt.Errorf("vend: access key id is not one Floe vends: %w", ErrUnknownAccessKey)
	}
	p, err := parseToken(sessionToken)
	if err != nil {
		return Session{}, "", err
	}
	k := e.key(ctx, p.keyID)
	if k == nil {
		return Session{}, "", fmt.Errorf("vend: session token sealed under unknown key %q: %w", p.keyID, ErrInvalidToken)
	}
	s, err := k.open(p)
	if err != nil {
		return Session{}, "", err
	}
	if subtle.ConstantTimeCompare([]byte(s.AccessKeyID), []byte(accessKeyID)) != 1 {
		return Session{}, "", fmt.Errorf("vend: session token belongs to another access key id: %w", ErrInvalidToken)
	}
	if !e.now().Before(s.Expires) {
		return Session{}, "", fmt.Errorf("vend: credential %s expired at %s: %w", s.ID, s.Expires.Format(time.RFC3339), ErrExpired)
	}
	return s, k.secret(sessionToken), nil
}

// validAccessKeyID reports whether id has the form of an embedded access
// key id: "FLOE" and 16 characters of [A-Z2-7].
func validAccessKeyID(id string) bool {
	rest, ok := strings.CutPrefix(id, accessKeyPrefix)
	if !ok || len(rest) != 16 {
		return false
	}
	for i := range len(rest) {
		if c := rest[i]; (c < 'A' || c > 'Z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

func (e *Embedded) currentKey() *sealKey {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.current
}

// sealingKey returns the key to mint with, rotating it first if it is due.
// If the rotation fails it returns the old key (Mint caps expiries at its
// life) and retries the rotation at most once a second.
func (e *Embedded) sealingKey(ctx context.Context) (*sealKey, error) {
	cur := e.currentKey()
	if cur != nil && e.now().Sub(cur.created) < e.rotation {
		return cur, nil
	}
	e.refresh.Lock()
	defer e.refresh.Unlock()
	now := e.now()
	cur = e.currentKey()
	recentlyFailed := !e.rotateFailed.IsZero() && now.Sub(e.rotateFailed) < retryInterval
	switch {
	case cur != nil && (now.Sub(cur.created) < e.rotation || recentlyFailed):
		return cur, nil
	case recentlyFailed:
		return nil, floe.E(floe.Unavailable, "credential", "cannot vend credentials: no sealing key")
	}
	if err := e.rotateLocked(ctx); err != nil {
		e.rotateFailed = now
		if cur = e.currentKey(); cur == nil {
			return nil, floe.Wrap(floe.Unavailable, err, "cannot vend credentials: no sealing key")
		}
		e.log.WarnContext(ctx, "vend: rotating the sealing key failed; minting with the old one", "key", cur.id, "err", err)
	}
	return e.currentKey(), nil
}

// key returns the key with id, reloading the keys from the store if it is
// unknown and they were not reloaded for that reason in the last second; nil
// if there is no such key.
func (e *Embedded) key(ctx context.Context, id string) *sealKey {
	e.mu.RLock()
	k := e.keys[id]
	e.mu.RUnlock()
	if k != nil {
		return k
	}
	e.refresh.Lock()
	defer e.refresh.Unlock()
	e.mu.RLock()
	k = e.keys[id]
	e.mu.RUnlock()
	if k != nil { // loaded while this caller waited
		return k
	}
	now := e.now()
	if !e.missReload.IsZero() && now.Sub(e.missReload) < retryInterval {
		return nil
	}
	e.missReload = now
	if err := e.reloadLocked(ctx); err != nil {
		e.log.WarnContext(ctx, "vend: reloading the sealing keys failed", "err", err)
		return nil
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.keys[id]
}

// rotateLocked reloads the keys and, if the newest is missing or due for
// rotation, creates a new one, deletes the keys no live credential can be
// sealed with, and reloads again. e.refresh must be held.
func (e *Embedded) rotateLocked(ctx context.Context) error {
	if err := e.reloadLocked(ctx); err != nil {
		return err
	}
	now := e.now().UTC()
	cur := e.currentKey()
	if cur != nil && now.Sub(cur.created) < e.rotation {
		return nil
	}
	created := now.Truncate(time.Microsecond)
	if cur != nil && !created.After(cur.created) {
		// A new key must sort first whatever the clocks of other nodes.
		created = cur.created.Add(time.Microsecond)
	}
	// The first try uses the id of the rotation period, so that nodes
	// rotating at once create one key; if it is taken but not newer than
	// the current key (clocks or rotations differ between nodes), a random
	// suffix makes the second try unique.
	id := "k" + now.Truncate(e.rotation).Format(keyIDLayout)
	for try := 0; ; try++ {
		k := Key{ID: id, Secret: make([]byte, KeySize), Created: created}
		rand.Read(k.Secret)
		if e.sealer != nil {
			sealed, err := e.sealer.Seal(ctx, SealPurpose, id, k.Secret)
			clear(k.Secret)
			if err != nil {
				return fmt.Errorf("vend: seal a new sealing key: %w", err)
			}
			k.Secret = sealed
		}
		err := e.ks.AddVendKey(ctx, k)
		if err == nil {
			e.log.InfoContext(ctx, "vend: created a sealing key", "key", id)
			break
		}
		if floe.KindOf(err) != floe.AlreadyExists {
			return fmt.Errorf("vend: store a new sealing key: %w", err)
		}
		if err := e.reloadLocked(ctx); err != nil {
			return err
		}
		if cur = e.currentKey(); (cur != nil && now.Sub(cur.created) < e.rotation) || try > 0 {
			break
		}
		id += "-" + strings.ToLower(rand.Text()[:8])
	}
	before := now.Add(-(e.rotation + MaxTTL + keyLeeway))
	if n, err := e.ks.DeleteVendKeysBefore(ctx, before); err != nil {
		e.log.WarnContext(ctx, "vend: deleting old sealing keys failed", "err", err)
	} else if n > 0 {
		e.log.InfoContext(ctx, "vend: deleted old sealing keys", "count", n, "created_before", before)
	}
	return e.reloadLocked(ctx)
}

// open unseals a stored key and derives its sealing key; the unsealed
// secret is cleared. Only keys not yet loaded are opened, so a key is
// unwrapped once per node, never per request.
func (e *Embedded) open(ctx context.Context, k Key) (*sealKey, error) {
	if e.sealer == nil {
		return newSealKey(k)
	}
	secret, err := e.sealer.Open(ctx, SealPurpose, k.ID, k.Secret)
	if err != nil {
		return nil, fmt.Errorf("vend key %s: %w", k.ID, err)
	}
	defer clear(secret)
	k.Secret = secret
	return newSealKey(k)
}

// reloadLocked replaces the keys with those in the store, deriving only new
// ones. e.refresh must be held.
func (e *Embedded) reloadLocked(ctx context.Context) error {
	stored, err := e.ks.VendKeys(ctx)
	if err != nil {
		return fmt.Errorf("vend: load sealing keys: %w", err)
	}
	if len(stored) > maxKeys {
		e.log.WarnContext(ctx, "vend: the store holds more sealing keys than are loaded; using the newest", "stored", len(stored), "loaded", maxKeys)
		stored = stored[:maxKeys]
	}
	e.mu.RLock()
	have := e.keys
	e.mu.RUnlock()
	keys := make(map[string]*sealKey, len(stored))
	var cur *sealKey
	var openErr error
	for _, k := range stored {
		sk := have[k.ID]
		if sk == nil {
			if sk, err = e.open(ctx, k); err != nil {
				e.log.WarnContext(ctx, "vend: ignoring an unusable sealing key", "err", err)
				if e.sealer != nil {
					openErr = err
				}
				continue
			}
		}
		keys[k.ID] = sk
		if cur == nil || sk.created.After(cur.created) {
			cur = sk
		}
	}
	if len(keys) == 0 && openErr != nil {
		// Not one key opens: this node lacks the wrapping key. Minting
		// with a key of its own would split the nodes; fail instead.
		return fmt.Errorf("vend: no sealing key in the store opens here (is the warehouse key file or KMS key the other nodes use configured?): %w", openErr)
	}
	e.mu.Lock()
	e.keys, e.current = keys, cur
	e.mu.Unlock()
	return nil
}
