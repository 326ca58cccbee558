package revoke

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// memStore is a Store in memory.
type memStore struct {
	mu      sync.Mutex
	version int64
	rows    []Entry
	fail    error
}

func (m *memStore) add(now time.Time, kind Kind, subject string, ttl time.Duration) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version++
	m.rows = append(m.rows, Entry{Kind: kind, Subject: subject, Version: m.version, Expires: now.Add(ttl)})
	return m.version
}

func (m *memStore) RevocationVersion(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version, m.fail
}

func (m *memStore) Revocations(_ context.Context, after int64) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Entry
	for _, e := range m.rows {
		if e.Version > after {
			out = append(out, e)
		}
	}
	return out, m.fail
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newList(t *testing.T, o Options) (*List, *memStore, *clock) {
	t.Helper()
	st := &memStore{}
	c := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	o.Now = c.now
	l, err := New(t.Context(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	return l, st, c
}

func TestCredential(t *testing.T) {
	l, st, c := newList(t, Options{})
	before := l.Version() // epoch of credentials minted before the revocations
	st.add(c.t, Token, "jti-1", time.Hour)
	st.add(c.t, Disabled, "mallory", 100*365*24*time.Hour)
	st.add(c.t, Grant, "bob", 13*time.Hour)
	st.add(c.t, Table, "crm.accounts", 13*time.Hour)
	st.add(c.t, Tokens, "carol", 13*time.Hour)
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	after := l.Version()
	tests := []struct {
		name                    string
		token, principal, table string
		epoch                   int64
		want                    error
	}{
		{"untouched", "jti-2", "alice", "crm.orders", before, nil},
		{"token revoked", "jti-1", "alice", "crm.orders", before, ErrTokenRevoked},
		{"token revoked, any epoch", "jti-1", "alice", "crm.orders", after, ErrTokenRevoked},
		{"principal disabled", "jti-2", "mallory", "crm.orders", before, ErrPrincipalDisabled},
		{"principal re-enabled, minted after", "jti-2", "mallory", "crm.orders", after, nil},
		{"grant revoked", "jti-2", "bob", "crm.orders", before, ErrGrantRevoked},
		{"minted after the grant revocation", "jti-2", "bob", "crm.orders", after, nil},
		{"table dropped", "jti-2", "alice", "crm.accounts", before, ErrTableDropped},
		{"table re-created", "jti-2", "alice", "crm.accounts", after, nil},
		{"no token, no table", "", "alice", "", before, nil},
		{"all tokens of the principal revoked", "jti-3", "carol", "crm.orders", before, ErrTokensRevoked},
		{"minted after the tokens were revoked", "jti-3", "carol", "crm.orders", after, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.Credential(tt.token, tt.principal, "", tt.table, tt.epoch); !errors.Is(got, tt.want) {
				t.Errorf("Credential = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSession(t *testing.T) {
	l, st, c := newList(t, Options{})
	since := l.Version()
	st.add(c.t, Grant, "bob", time.Hour) // grants do not end SQL sessions: each statement is authorized
	st.add(c.t, Disabled, "mallory", time.Hour)
	st.add(c.t, Token, "jti-1", time.Hour)
	st.add(c.t, Tokens, "carol", time.Hour)
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token, principal string
		since                  int64
		want                   error
	}{
		{"grant revoked", "jti-2", "bob", since, nil},
		{"password login of a disabled principal", "", "mallory", since, ErrPrincipalDisabled},
		{"logged in after the disable", "", "mallory", l.Version(), nil},
		{"token revoked", "jti-1", "alice", since, ErrTokenRevoked},
		{"token session of a principal whose tokens were revoked", "jti-3", "carol", since, ErrTokensRevoked},
		{"token session opened after", "jti-3", "carol", l.Version(), nil},
		{"password session of a principal whose tokens were revoked", "", "carol", since, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.Session(tt.token, tt.principal, tt.since); !errors.Is(got, tt.want) {
				t.Errorf("Session = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestExpiredEntriesDropped: the list is bounded by expiry.
func TestExpiredEntriesDropped(t *testing.T) {
	l, st, c := newList(t, Options{})
	st.add(c.t, Token, "short", time.Minute)
	st.add(c.t, Token, "long", time.Hour)
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 2 {
		t.Fatalf("Len = %d, want 2", l.Len())
	}
	c.t = c.t.Add(2 * time.Minute)
	st.add(c.t, Table, "x.y", time.Hour) // any change rebuilds the state
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 2 || l.Credential("short", "", "", "", 0) != nil || l.Credential("long", "", "", "", 0) == nil {
		t.Fatalf("Len = %d; the expired token's entry should be gone and the live one kept", l.Len())
	}
}

// TestMaxEntriesCollapsesToFloor hits the bound: the entries collapse into
// a floor that refuses every older credential and session, and nothing
// newer.
func TestMaxEntriesCollapsesToFloor(t *testing.T) {
	l, st, c := newList(t, Options{MaxEntries: 3})
	old := l.Version()
	for _, p := range []string{"a", "b", "c", "d"} {
		st.add(c.t, Grant, p, time.Hour)
	}
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 0 {
		t.Fatalf("Len = %d after overflow, want 0", l.Len())
	}
	if err := l.Credential("", "zed", "", "t.u", old); !errors.Is(err, ErrRevoked) {
		t.Errorf("old credential of an unrelated principal: %v, want ErrRevoked", err)
	}
	if err := l.Session("", "zed", old); !errors.Is(err, ErrRevoked) {
		t.Errorf("old session: %v, want ErrRevoked", err)
	}
	if err := l.Credential("", "a", "", "t.u", l.Version()); err != nil {
		t.Errorf("credential minted after the overflow: %v", err)
	}
	st.add(c.t, Grant, "e", time.Hour)
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 1 || !errors.Is(l.Credential("", "e", "", "", l.Version()-1), ErrGrantRevoked) {
		t.Errorf("after the floor, entries are held again: Len = %d", l.Len())
	}
}

// TestStale: a node that cannot refresh refuses everything after MaxStale.
func TestStale(t *testing.T) {
	l, st, c := newList(t, Options{MaxStale: 5 * time.Second})
	st.fail = errors.New("store down")
	c.t = c.t.Add(4 * time.Second)
	if err := l.Refresh(t.Context()); err == nil {
		t.Fatal("Refresh succeeded on a failing store")
	}
	if err := l.Credential("", "a", "", "", l.Version()); err != nil {
		t.Fatalf("within MaxStale: %v", err)
	}
	c.t = c.t.Add(2 * time.Second)
	if err := l.Credential("", "a", "", "", l.Version()); !errors.Is(err, ErrStale) {
		t.Fatalf("after MaxStale: %v, want ErrStale", err)
	}
	if err := l.Session("", "a", l.Version()); !errors.Is(err, ErrStale) {
		t.Fatalf("session after MaxStale: %v, want ErrStale", err)
	}
	st.fail = nil
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Credential("", "a", "", "", l.Version()); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}

// TestRunPicksUpWithinInterval: Run makes a revocation visible within one
// poll interval.
func TestRunPicksUpWithinInterval(t *testing.T) {
	st := &memStore{}
	l, err := New(t.Context(), st, Options{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go l.Run(ctx)
	st.add(time.Now(), Token, "jti", time.Hour)
	deadline := time.Now().Add(time.Second)
	for l.Credential("jti", "", "", "", 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("revocation not seen within 1 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCheckAllocs(t *testing.T) {
	l, st, c := newList(t, Options{})
	st.add(c.t, Grant, "bob", time.Hour)
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		_ = l.Credential("jti-2", "alice", "", "crm.accounts", 0)
		_ = l.Credential("jti-2", "bob", "", "crm.accounts", 0)
	})
	if n != 0 {
		t.Fatalf("Credential allocates %v times per call", n)
	}
}

func BenchmarkCredential(b *testing.B) {
	st := &memStore{}
	now := time.Now()
	for i := range 1000 {
		st.add(now, Token, "jti-"+string(rune('a'+i%26))+time.Duration(i).String(), time.Hour)
	}
	l, err := New(context.Background(), st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Credential("jti-x", "alice", "", "crm.accounts", 0)
	}
}

// TestTableDropSparesTheDropper: a table's drop refuses every credential of
// the table minted before it, except those of the principal whose drop it
// was when the entry names it (it could read the whole table and purges the
// files with them); other principals' are refused, the same principal's of
// another table too.
func TestTableDropSparesTheDropper(t *testing.T) {
	l, st, c := newList(t, Options{})
	before := l.Version()
	st.mu.Lock()
	st.version++
	st.rows = append(st.rows, Entry{Kind: Table, Subject: "crm.accounts", Version: st.version, Expires: c.t.Add(time.Hour), Exempt: "p-owner"})
	st.version++
	st.rows = append(st.rows, Entry{Kind: Table, Subject: "crm.leads", Version: st.version, Expires: c.t.Add(time.Hour)})
	st.mu.Unlock()
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, principalID, table string
		want                     error
	}{
		{"the dropper", "p-owner", "crm.accounts", nil},
		{"a reader", "p-reader", "crm.accounts", ErrTableDropped},
		{"no principal id", "", "crm.accounts", ErrTableDropped},
		{"the dropper, a table dropped without exemption", "p-owner", "crm.leads", ErrTableDropped},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.Credential("jti", "someone", tt.principalID, tt.table, before); !errors.Is(got, tt.want) {
				t.Errorf("Credential = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPlanCancels: a cancelled plan is cancelled for every epoch; plan
// cancels are bounded apart from the other entries, and hitting the bound
// cancels every older plan without refusing any credential.
func TestPlanCancels(t *testing.T) {
	l, st, c := newList(t, Options{MaxEntries: 3})
	old := l.Version()
	st.add(c.t, Plan, "p0", time.Hour)
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !l.PlanCancelled("p0", old) || l.PlanCancelled("p1", old) {
		t.Errorf("after cancelling p0: p0 %v, p1 %v; want true, false", l.PlanCancelled("p0", old), l.PlanCancelled("p1", old))
	}
	if l.Len() != 0 {
		t.Errorf("plan cancels counted with the credential entries: Len = %d", l.Len())
	}
	for _, p := range []string{"p1", "p2", "p3"} {
		st.add(c.t, Plan, p, time.Hour)
	}
	if err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !l.PlanCancelled("other", old) {
		t.Error("after overflow, a plan issued before it is not cancelled")
	}
	if l.PlanCancelled("other", l.Version()) {
		t.Error("after overflow, a plan issued after it is cancelled")
	}
	if err := l.Credential("", "zed", "", "t.u", old); err != nil {
		t.Errorf("plan cancels refused a credential: %v", err)
	}
}
