package sharecat

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestResolveCache: within ResolveCacheTTL an authenticated token and a
// resolved table are reused; a revocation is seen at once all the same
// (Revoked is asked every time); an unshared table and an allowlist
// change are seen once the TTL has passed; refusals are not cached.
func TestResolveCache(t *testing.T) {
	clk := &clock{t: time.Now()}
	f := newFixture(t, func(o *Options) { o.Now = clk.now })
	path := cat + "/sales/namespaces/emea/tables/orders"
	f.load(t, "alice-token", path)

	f.res.unshare("sales", "emea", "orders")
	f.res.denied[mustAddr("192.0.2.7")] = true
	f.load(t, "alice-token", path) // both cached
	clk.add(DefaultResolveCacheTTL)
	if r := f.do(t, "alice-token", "GET", path, ""); r.status != 403 {
		t.Fatalf("allowlist after the TTL: %d %s", r.status, r.body)
	}
	delete(f.res.denied, mustAddr("192.0.2.7"))
	if r := f.do(t, "alice-token", "GET", path, ""); r.status != 404 {
		t.Fatalf("unshared table after the TTL: %d %s", r.status, r.body)
	}

	// Revocation: at once, although the authentication is cached and the
	// resolver's Authenticate has not seen it.
	f.load(t, "alice-token", cat+"/sales/namespaces/emea/tables/customers")
	f.res.stale = true
	f.res.revoke("alice-token")
	if r := f.do(t, "alice-token", "GET", cat+"/sales/namespaces/emea/tables/customers", ""); r.status != 401 {
		t.Fatalf("revoked with a cached authentication: %d %s", r.status, r.body)
	}
	// Token expiry: at once too.
	f.res.recipient("hal", "hal-token", clk.now().Add(time.Second/2), "sales")
	f.load(t, "hal-token", cat+"/sales/namespaces/emea/tables/customers")
	clk.add(time.Second / 2)
	if r := f.do(t, "hal-token", "GET", cat+"/sales/namespaces/emea/tables/customers", ""); r.status != 401 {
		t.Fatalf("expired with a cached authentication: %d %s", r.status, r.body)
	}
}

// TestResolveCacheOff: with a negative TTL every request asks the resolver.
func TestResolveCacheOff(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.ResolveCacheTTL = -1 })
	path := cat + "/sales/namespaces/emea/tables/orders"
	f.load(t, "alice-token", path)
	f.res.unshare("sales", "emea", "orders")
	if r := f.do(t, "alice-token", "GET", path, ""); r.status != 404 {
		t.Fatalf("unshared table: %d %s", r.status, r.body)
	}
}

// TestResolveCacheBounds: the resolution caches hold at most
// MaxCachedResolutions entries each.
func TestResolveCacheBounds(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxCachedResolutions = 2 })
	for i := range 6 {
		name := fmt.Sprintf("q%d", i)
		f.res.recipient(name, name+"-token", time.Time{}, "sales")
		f.load(t, name+"-token", cat+"/sales/namespaces/emea/tables/orders")
		if a, tb := f.h.auths.len(), f.h.tables.len(); a > 2 || tb > 2 || a == 0 || tb == 0 {
			t.Fatalf("%d cached authentications, %d cached tables", a, tb)
		}
	}
}

// TestAllowlistInCredentials: the credential vended to a recipient
// carries the allowlist its authentication returned.
func TestAllowlistInCredentials(t *testing.T) {
	f := newFixture(t)
	f.res.mu.Lock()
	r := f.res.tokens["alice-token"]
	r.AllowedCIDRs = []string{"192.0.2.0/24"}
	f.res.tokens["alice-token"] = r
	f.res.mu.Unlock()
	f.load(t, "alice-token", cat+"/sales/namespaces/emea/tables/orders")
	ss := f.minter.minted()
	if len(ss) != 1 || fmt.Sprint(ss[0].AllowedCIDRs) != "[192.0.2.0/24]" {
		t.Fatalf("sessions %+v", ss)
	}
}
