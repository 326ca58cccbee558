// Package revoke keeps, on every node, the state that makes vended storage
// credentials and open SQL sessions stop working when what they were derived
// from is revoked: an access token revoked, a principal disabled or all its
// tokens revoked, a grant or
// role membership revoked, a table dropped or renamed.
//
// Vended credentials stay stateless: the sealed session of a credential
// carries its token id, principal and table, and the Epoch it was minted
// under — the revocation version this node had loaded then. The store keeps
// one row per revoked subject with the revocation version of the
// transaction that wrote it, and a single revocation_version row that every
// revocation increments. A List polls that row (one primary-key read) every
// Options.Interval (default 250 ms, at most 1 s) and, when it changed, loads
// the newer rows. The checks (Credential, Session) are then map lookups in
// memory, without allocation:
//
//   - a credential of a revoked token is refused, whatever its epoch;
//   - a credential minted under an epoch older than a revocation of its
//     principal (disabled, or a grant or role membership revoked) or of its
//     table (dropped or renamed) is refused; a client loads the table again
//     for a fresh credential if it still may;
//   - a credential of a principal whose tokens were all revoked (Tokens)
//     is refused when minted under an older epoch;
//   - an SQL session of a revoked token, or of a principal disabled after
//     the session logged in, or of a token of a principal whose tokens were
//     all revoked after the session logged in, refuses its next statement.
//
// Granting more never revokes anything. Revoking any grant of a principal
// revokes all its credentials, not only those of the grant's table (the
// simple sound rule): loading a table again gives working ones.
//
// The state is bounded: rows (and entries) are dropped once every
// credential they can refuse has expired: vend.MaxTTL plus leeway after the
// revocation, or after the revoked token's own expiry (a credential may
// outlive the token it was vended under, as an AWS session outlives the
// call that made it); a disabled principal's row is kept while it stays
// disabled. Should a node hold more than
// Options.MaxEntries entries, it collapses them into one floor: every
// credential and session older than the newest revocation is refused, which
// is sound, only broader.
//
// A node that cannot refresh for Options.MaxStale (default 5 s) refuses every
// credential and statement until it can again: it can no longer promise that
// a revocation reaches it within a second.
package revoke

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-lake/floe"
)

// Kind is what a revocation entry revokes.
type Kind string

// Kinds of revocation entries.
const (
	// Token revokes everything derived from an access token; the subject is
	// its id (jti).
	Token Kind = "token"
	// Disabled revokes what a principal held when it was disabled; the
	// subject is the principal's name.
	Disabled Kind = "disabled"
	// Tokens revokes everything derived from every token a principal held
	// (POST /principals/{name}/revoke-tokens); the subject is the
	// principal's name. Password SQL sessions are not refused.
	Tokens Kind = "tokens"
	// Grant revokes the credentials of a principal that lost a grant or a
	// role; the subject is the principal's name.
	Grant Kind = "grant"
	// Table revokes the credentials vended for a table that was dropped or
	// renamed; the subject is the table's "ns.name".
	Table Kind = "table"
	// Plan is a scan plan cancelled on some node (see restcat); the
	// subject is its plan id's digest. It refuses no credential: every
	// node answers the plan id as cancelled.
	Plan Kind = "plan"
)

// Entry is one revoked subject as the store keeps it.
type Entry struct {
	Kind    Kind
	Subject string
	// Version is the revocation version of the transaction that wrote it.
	Version int64
	// Expires is when nothing the entry refuses can still be alive.
	Expires time.Time
	// Exempt is, for a Table entry, the id of the principal whose drop it
	// was, when it could read the whole table: its own credentials are not
	// refused (they purge the files). "" for none.
	Exempt string
}

// Store reads revocations. *sqlstore.Store implements it.
type Store interface {
	// RevocationVersion returns the current revocation version: one
	// primary-key read.
	RevocationVersion(ctx context.Context) (int64, error)
	// Revocations returns the unexpired entries whose version is above
	// after.
	Revocations(ctx context.Context, after int64) ([]Entry, error)
}

// Errors of the checks, each a *floe.Error of kind Forbidden whose message
// is safe to show to the client.
var (
	ErrTokenRevoked      = floe.E(floe.Forbidden, "credential", "credential revoked: token revoked")
	ErrPrincipalDisabled = floe.E(floe.Forbidden, "credential", "credential revoked: principal disabled")
	ErrTokensRevoked     = floe.E(floe.Forbidden, "credential", "credential revoked: the principal's tokens were revoked; get a new token")
	ErrGrantRevoked      = floe.E(floe.Forbidden, "credential", "credential revoked: grant revoked; load the table again for a new credential")
	ErrTableDropped      = floe.E(floe.Forbidden, "credential", "credential revoked: table dropped or renamed")
	ErrRevoked           = floe.E(floe.Forbidden, "credential", "credential revoked: too many revocations at once; load the table again for a new credential")
	ErrStale             = floe.E(floe.Unavailable, "credential", "revocation state is stale: this node cannot reach the metadata store")
)

// Defaults of Options.
const (
	DefaultInterval   = 250 * time.Millisecond
	MaxInterval       = time.Second
	DefaultMaxStale   = 5 * time.Second
	DefaultMaxEntries = 1 << 20
)

// Options configures a List. Zero values mean defaults.
type Options struct {
	// Interval is how often the revocation version is polled (default
	// DefaultInterval, at most MaxInterval).
	Interval time.Duration
	// MaxStale is how long a node honours credentials without a successful
	// refresh (default DefaultMaxStale).
	MaxStale time.Duration
	// MaxEntries bounds the entries held in memory (default
	// DefaultMaxEntries); beyond it they collapse into a floor.
	MaxEntries int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// List is a node's view of the revocations. It is safe for concurrent use.
type List struct {
	store Store
	opts  Options

	state atomic.Pointer[state]
	// fresh is when the state was last known current (Unix nanoseconds).
	fresh atomic.Int64
	// mu serialises refreshes.
	mu sync.Mutex
}

type entry struct {
	version int64
	expires int64  // Unix seconds
	exempt  string // Entry.Exempt
}

// state is an immutable snapshot; a refresh replaces it.
type state struct {
	version                                           int64 // every entry of version <= version is loaded
	floor                                             int64 // epochs below it are refused (after an overflow)
	tokens, disabled, principalTokens, grants, tables map[string]entry
	// plans are the cancelled scan plans, bounded apart (MaxEntries): on
	// overflow they collapse into planFloor, below which every plan is
	// cancelled, so that cancels never widen the credential floor.
	plans     map[string]entry
	planFloor int64
}

func (s *state) size() int {
	return len(s.tokens) + len(s.disabled) + len(s.principalTokens) + len(s.grants) + len(s.tables)
}

// New returns a List loaded from st; it fails when the first load does.
// Call Run to keep it current.
func New(ctx context.Context, st Store, o Options) (*List, error) {
	if st == nil {
		return nil, errors.New("revoke: New needs a Store")
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	o.Interval = min(o.Interval, MaxInterval)
	if o.MaxStale <= 0 {
		o.MaxStale = DefaultMaxStale
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l := &List{store: st, opts: o}
	l.state.Store(&state{})
	if err := l.Refresh(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Run refreshes the list every Options.Interval until ctx is done.
// Failures are logged; the list turns stale after Options.MaxStale.
func (l *List) Run(ctx context.Context) {
	t := time.NewTicker(l.opts.Interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := l.Refresh(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			failing = true
			l.opts.Logger.WarnContext(ctx, "revoke: refreshing the revocation state failed", "err", err)
		case err == nil && failing:
			failing = false
			l.opts.Logger.InfoContext(ctx, "revoke: the revocation state is current again")
		}
	}
}

// Refresh polls the revocation version and loads the entries newer than the
// state's.
func (l *List) Refresh(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	started := l.opts.Now()
	cur := l.state.Load()
	v, err := l.store.RevocationVersion(ctx)
	if err != nil {
		return fmt.Errorf("revoke: read the revocation version: %w", err)
	}
	if v != cur.version {
		es, err := l.store.Revocations(ctx, cur.version)
		if err != nil {
			return fmt.Errorf("revoke: load revocations: %w", err)
		}
		l.state.Store(l.next(cur, v, es))
		if len(es) > 0 {
			l.opts.Logger.InfoContext(ctx, "revoke: loaded revocations", "count", len(es), "version", v)
		}
	}
	l.fresh.Store(started.UnixNano())
	return nil
}

// next returns the state after cur with the entries es, at version v
// (or the highest entry version, if above), without expired entries.
func (l *List) next(cur *state, v int64, es []Entry) *state {
	now := l.opts.Now().Unix()
	n := &state{version: max(v, cur.version), floor: cur.floor, planFloor: cur.planFloor, plans: live(cur.plans, now),
		tokens: live(cur.tokens, now), disabled: live(cur.disabled, now), principalTokens: live(cur.principalTokens, now),
		grants: live(cur.grants, now), tables: live(cur.tables, now)}
	for _, e := range es {
		n.version = max(n.version, e.Version)
		if e.Expires.Unix() < now {
			continue
		}
		var m map[string]entry
		switch e.Kind {
		case Token:
			m = n.tokens
		case Disabled:
			m = n.disabled
		case Tokens:
			m = n.principalTokens
		case Grant:
			m = n.grants
		case Table:
			m = n.tables
		case Plan:
			m = n.plans
		default:
			l.opts.Logger.Warn("revoke: ignoring an entry of unknown kind", "kind", e.Kind)
			continue
		}
		if old, ok := m[e.Subject]; !ok || old.version < e.Version {
			m[e.Subject] = entry{version: e.Version, expires: e.Expires.Unix(), exempt: e.Exempt}
		}
	}
	if len(n.plans) > l.opts.MaxEntries {
		l.opts.Logger.Warn("revoke: too many cancelled scan plans held; cancelling every older plan", "entries", len(n.plans),
			"max", l.opts.MaxEntries, "floor", n.version)
		n.plans, n.planFloor = map[string]entry{}, n.version
	}
	if n.size() > l.opts.MaxEntries {
		l.opts.Logger.Warn("revoke: too many revocations held; refusing every older credential", "entries", n.size(),
			"max", l.opts.MaxEntries, "floor", n.version)
		return &state{version: n.version, floor: n.version, tokens: map[string]entry{}, disabled: map[string]entry{},
			principalTokens: map[string]entry{}, grants: map[string]entry{}, tables: map[string]entry{}, plans: n.plans, planFloor: n.planFloor}
	}
	return n
}

// live returns a copy of m without the entries expired before now.
func live(m map[string]entry, now int64) map[string]entry {
	out := make(map[string]entry, len(m))
	for k, e := range maps.All(m) {
		if e.expires >= now {
			out[k] = e
		}
	}
	return out
}

// Version is the revocation version this node has loaded: the epoch to mint
// a credential under, or to start an SQL session at.
func (l *List) Version() int64 { return l.state.Load().version }

// Len returns how many entries the node holds.
func (l *List) Len() int { return l.state.Load().size() }

// stale reports whether the state was not known current for MaxStale.
func (l *List) stale() bool {
	return l.opts.Now().UnixNano()-l.fresh.Load() > int64(l.opts.MaxStale)
}

// Credential checks a vended credential: of access token tokenID, for the
// principal named principal whose id is principalID and the table
// ("ns.name", may be empty), minted under epoch. A table's drop spares the
// credentials of the principal that dropped it when that principal could
// read the whole table (Entry.Exempt; never with principalID ""). It
// returns nil or one of the Err values.
func (l *List) Credential(tokenID, principal, principalID, table string, epoch int64) error {
	if l.stale() {
		return ErrStale
	}
	s := l.state.Load()
	switch {
	case epoch < s.floor:
		return ErrRevoked
	case tokenID != "" && hasKey(s.tokens, tokenID):
		return ErrTokenRevoked
	case newer(s.disabled, principal, epoch):
		return ErrPrincipalDisabled
	case newer(s.principalTokens, principal, epoch):
		return ErrTokensRevoked
	case table != "" && dropped(s.tables, table, principalID, epoch):
		return ErrTableDropped // first: dropping a table also revokes the grants on it
	case newer(s.grants, principal, epoch):
		return ErrGrantRevoked
	}
	return nil
}

// PlanCancelled reports whether the scan plan whose id has digest subject,
// issued at revocation version epoch, was cancelled on any node; also, to
// be safe, when this node is stale or the plan is older than a collapse of
// too many cancels.
func (l *List) PlanCancelled(subject string, epoch int64) bool {
	if l.stale() {
		return true
	}
	s := l.state.Load()
	return epoch < s.planFloor || hasKey(s.plans, subject)
}

// Session checks an SQL session of access token tokenID ("" for a password
// login) and the principal named principal, that logged in at revocation
// version since.
func (l *List) Session(tokenID, principal string, since int64) error {
	if l.stale() {
		return ErrStale
	}
	s := l.state.Load()
	switch {
	case since < s.floor:
		return ErrRevoked
	case tokenID != "" && hasKey(s.tokens, tokenID):
		return ErrTokenRevoked
	case newer(s.disabled, principal, since):
		return ErrPrincipalDisabled
	case tokenID != "" && newer(s.principalTokens, principal, since):
		return ErrTokensRevoked
	}
	return nil
}

func hasKey(m map[string]entry, k string) bool {
	_, ok := m[k]
	return ok
}

// dropped reports whether the table entry for table refuses a credential
// of principalID minted under epoch: revoked after epoch, and not the drop
// of that principal (see Entry.Exempt).
func dropped(tables map[string]entry, table, principalID string, epoch int64) bool {
	e, ok := tables[table]
	return ok && e.version > epoch && (principalID == "" || e.exempt != principalID)
}

// newer reports whether m has an entry for k revoked after epoch.
func newer(m map[string]entry, k string, epoch int64) bool {
	e, ok := m[k]
	return ok && e.version > epoch
}
