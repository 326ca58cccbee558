package sharecat

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sharing"
)

// fakeResolver is an in-memory sharing.Resolver: recipients by token,
// grants of shares to recipients and the objects of each share.
type fakeResolver struct {
	mu      sync.Mutex
	tokens  map[string]sharing.Recipient // token -> recipient
	revoked map[string]bool              // token id -> revoked
	grants  map[string][]string          // recipient name -> share names
	objects map[string][]sharing.Table   // share -> objects, ordered by schema, name
	denied  map[netip.Addr]bool          // client addresses outside every allowlist
	// stale makes Authenticate miss revocations (as a resolver that
	// caches authenticated tokens would): only Revoked sees them.
	stale bool
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{tokens: map[string]sharing.Recipient{}, revoked: map[string]bool{},
		grants: map[string][]string{}, objects: map[string][]sharing.Table{}, denied: map[netip.Addr]bool{}}
}

// recipient adds a recipient with a token; expiry zero never expires.
func (f *fakeResolver) recipient(name, token string, expiry time.Time, shares ...string) sharing.Recipient {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := sharing.Recipient{ID: "rid-" + name, Name: name, TokenID: "tid-" + strings.TrimSuffix(token, "-token"), TokenExpiry: expiry}
	f.tokens[token] = r
	f.grants[name] = append(f.grants[name], shares...)
	return r
}

func (f *fakeResolver) add(t sharing.Table) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[t.Share] = append(f.objects[t.Share], t)
}

func (f *fakeResolver) revoke(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked["tid-"+strings.TrimSuffix(token, "-token")] = true
}

func (f *fakeResolver) Authenticate(_ context.Context, token string, remote netip.Addr) (sharing.Recipient, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.tokens[token]
	if !ok || (f.revoked[r.TokenID] && !f.stale) || (!r.TokenExpiry.IsZero() && time.Now().After(r.TokenExpiry)) {
		return sharing.Recipient{}, floe.E(floe.Unauthenticated, "token", "invalid recipient token")
	}
	if f.denied[remote] {
		return sharing.Recipient{}, floe.E(floe.Forbidden, "", "client address %s is not allowed", remote)
	}
	return r, nil
}

func (f *fakeResolver) granted(r sharing.Recipient, share string) bool {
	for _, s := range f.grants[r.Name] {
		if s == share {
			return true
		}
	}
	return false
}

func (f *fakeResolver) Shares(_ context.Context, r sharing.Recipient) ([]sharing.Share, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sharing.Share
	for _, s := range f.grants[r.Name] {
		out = append(out, sharing.Share{ID: "sid-" + s, Name: s})
	}
	return out, nil
}

func (f *fakeResolver) Tables(_ context.Context, r sharing.Recipient, share string) ([]sharing.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.granted(r, share) {
		return nil, floe.E(floe.NotFound, "share", "share %s does not exist", share)
	}
	return append([]sharing.Table(nil), f.objects[share]...), nil
}

func (f *fakeResolver) Table(_ context.Context, r sharing.Recipient, share, schema, name string) (sharing.Table, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.granted(r, share) {
		for _, t := range f.objects[share] {
			if t.Schema == schema && t.Name == name {
				return t, nil
			}
		}
	}
	return sharing.Table{}, floe.E(floe.NotFound, "table", "%s", fmt.Sprintf("table %s.%s.%s does not exist", share, schema, name))
}

func (f *fakeResolver) Revoked(_ context.Context, r sharing.Recipient) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.revoked[r.TokenID], nil
}

// unshare removes share's object named schema.name.
func (f *fakeResolver) unshare(share, schema, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var kept []sharing.Table
	for _, t := range f.objects[share] {
		if t.Schema != schema || t.Name != name {
			kept = append(kept, t)
		}
	}
	f.objects[share] = kept
}
