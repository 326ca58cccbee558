package remote

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// tableRemote serves loadTable for any name with an ETag per table that
// changes when version is bumped, answering 304 to a matching If-None-Match.
type tableRemote struct {
	*fake
	mu      sync.Mutex
	version int
	expires time.Time // of the vended credentials; zero: none vended
	noExp   bool      // vend credentials without an expiry
	padding int       // bytes of metadata padding
}

func newTableRemote(t *testing.T, clk *clock) *tableRemote {
	tr := &tableRemote{expires: clk.Now().Add(time.Hour)}
	tr.fake = newFake(t, withConfig(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		etag := fmt.Sprintf(`"%s-v%d"`, r.URL.Path, tr.version)
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		cfg := `"s3.endpoint":"http://s3"`
		if !tr.expires.IsZero() {
			cfg += `,"s3.access-key-id":"AK","s3.secret-access-key":"SK","s3.session-token":"ST"`
			if !tr.noExp {
				cfg += fmt.Sprintf(`,"s3.session-token-expires-at-ms":"%d"`, tr.expires.UnixMilli())
			}
		}
		creds := ""
		if !tr.expires.IsZero() {
			creds = `,"storage-credentials":[{"prefix":"s3://b/t","config":{` + cfg + `}}]`
		}
		writeJSON(w, 200, fmt.Sprintf(`{"metadata-location":"s3://b/t/v%d.json","metadata":{"v":%d,"pad":"%s"},"config":{%s}%s}`,
			tr.version, tr.version, strings.Repeat("x", tr.padding), cfg, creds))
	}))
	return tr
}

func (tr *tableRemote) loads() int {
	n := 0
	for _, s := range tr.requests() {
		if strings.Contains(s.Path, "/tables/") {
			n++
		}
	}
	return n
}

func TestCacheTTLAndRevalidation(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	tr := newTableRemote(t, clk)
	c := newClient(t, tr.srv.URL, func(o *Options) { o.Now = clk.Now })
	load := func() *LoadTableResult {
		t.Helper()
		r, err := c.LoadTable(ctx, []string{"a"}, "t", false)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1 := load()
	clk.Add(DefaultCacheTTL - time.Second)
	load()
	if n := tr.loads(); n != 1 {
		t.Fatalf("%d loads within the TTL, want 1", n)
	}
	clk.Add(2 * time.Second) // TTL over: revalidate, 304 keeps the entry
	r2 := load()
	reqs := tr.requests()
	if n := tr.loads(); n != 2 || reqs[len(reqs)-1].Header.Get("If-None-Match") != r1.ETag || r2.MetadataLocation != r1.MetadataLocation {
		t.Fatalf("%d loads, If-None-Match %q, etag %q", n, reqs[len(reqs)-1].Header.Get("If-None-Match"), r1.ETag)
	}
	load() // the 304 restarted the TTL
	if n := tr.loads(); n != 2 {
		t.Fatalf("%d loads after a 304, want 2", n)
	}
	tr.mu.Lock()
	tr.version = 1
	tr.mu.Unlock()
	clk.Add(DefaultCacheTTL)
	if r3 := load(); r3.MetadataLocation != "s3://b/t/v1.json" || r3.ETag == r1.ETag {
		t.Fatalf("changed table served %+v", r3)
	}
	// Lists and namespaces are cached for the TTL as well.
	for range 2 {
		if _, err := c.ListTables(ctx, []string{"a"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := tr.count("/v1/p/namespaces/a/tables"); n != 1 {
		t.Fatalf("%d list requests within the TTL", n)
	}
}

func TestCacheDisabled(t *testing.T) {
	clk := newClock()
	tr := newTableRemote(t, clk)
	c := newClient(t, tr.srv.URL, func(o *Options) { o.Now = clk.Now; o.CacheTTL = -1 })
	for range 3 {
		if _, err := c.LoadTable(context.Background(), []string{"a"}, "t", false); err != nil {
			t.Fatal(err)
		}
	}
	if n := tr.loads(); n != 3 {
		t.Fatalf("%d loads without a cache, want 3", n)
	}
	for _, r := range tr.requests() {
		if r.Header.Get("If-None-Match") != "" {
			t.Fatal("revalidation without a cache")
		}
	}
}

// TestCacheBound: the cache never holds more than MaxCacheBytes; at the
// bound, the least recently used table is evicted; a table bigger than
// the bound is not cached.
func TestCacheBound(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	tr := newTableRemote(t, clk)
	tr.expires = time.Time{}
	tr.padding = 10_000
	const bound = 25_000 // two tables of ~10 kB fit, three do not
	c := newClient(t, tr.srv.URL, func(o *Options) { o.Now = clk.Now; o.MaxCacheBytes = bound })
	load := func(name string) {
		t.Helper()
		if _, err := c.LoadTable(ctx, []string{"a"}, name, false); err != nil {
			t.Fatal(err)
		}
		if _, used := c.cache.stats(); used > bound {
			t.Fatalf("cache holds %d bytes, bound %d", used, bound)
		}
	}
	load("t1")
	load("t2")
	if n, used := c.cache.stats(); n != 2 || used < bound/2 {
		t.Fatalf("%d entries, %d bytes", n, used)
	}
	load("t1") // t1 is now the most recently used
	if n := tr.loads(); n != 2 {
		t.Fatalf("%d loads", n)
	}
	load("t3") // evicts t2
	if n, _ := c.cache.stats(); n != 2 {
		t.Fatalf("%d entries at the bound", n)
	}
	load("t1")
	if n := tr.loads(); n != 3 {
		t.Fatalf("t1 was evicted: %d loads", n)
	}
	load("t2")
	if n := tr.loads(); n != 4 {
		t.Fatalf("t2 was not evicted: %d loads", n)
	}
	tr.padding = bound
	load("huge")
	load("huge")
	if n := tr.loads(); n != 6 {
		t.Fatalf("an entry over the bound was cached: %d loads", n)
	}
}

// TestCacheCredentials: credentials are served from the cache only before
// half their lifetime; credentials of unknown lifetime never; describe-only
// loads never carry credentials and never ask for them.
func TestCacheCredentials(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		life      time.Duration // of the vended credentials; 0: none vended
		noExp     bool
		ttl       time.Duration
		advance   time.Duration
		wantLoads int // after a second load with credentials
	}{
		{"reused before half-life", time.Hour, false, 2 * time.Hour, 29 * time.Minute, 1},
		{"refetched past half-life", time.Hour, false, 2 * time.Hour, 31 * time.Minute, 2},
		{"past half-life, no If-None-Match", 10 * time.Minute, false, 2 * time.Hour, 6 * time.Minute, 2},
		{"unknown lifetime not reused", time.Hour, true, 2 * time.Hour, time.Second, 2},
		{"none vended: reused within the TTL", 0, false, 2 * time.Hour, time.Minute, 1},
		{"TTL over, half-life not: revalidated (304)", time.Hour, false, time.Minute, 2 * time.Minute, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			tr := newTableRemote(t, clk)
			tr.noExp = tc.noExp
			if tc.life == 0 {
				tr.expires = time.Time{}
			} else {
				tr.expires = clk.Now().Add(tc.life)
			}
			c := newClient(t, tr.srv.URL, func(o *Options) { o.Now = clk.Now; o.CacheTTL = tc.ttl })
			r1, err := c.LoadTable(ctx, []string{"a"}, "t", true)
			if err != nil {
				t.Fatal(err)
			}
			if tc.life > 0 && (r1.Config["s3.access-key-id"] != "AK" || len(r1.StorageCredentials) != 1) {
				t.Fatalf("credentials not passed through: %+v", r1)
			}
			if got := tr.requests()[0].Header.Get("X-Iceberg-Access-Delegation"); got != "vended-credentials" {
				t.Fatalf("delegation header %q", got)
			}
			clk.Add(tc.advance)
			r2, err := c.LoadTable(ctx, []string{"a"}, "t", true)
			if err != nil {
				t.Fatal(err)
			}
			if n := tr.loads(); n != tc.wantLoads {
				t.Fatalf("%d loads, want %d", n, tc.wantLoads)
			}
			if tc.life > 0 && r2.Config["s3.access-key-id"] != "AK" {
				t.Fatalf("second load lost its credentials: %+v", r2)
			}
			reqs := tr.requests()
			last := reqs[len(reqs)-1]
			revalidated := last.Header.Get("If-None-Match") != ""
			if want := strings.Contains(tc.name, "revalidated"); tc.wantLoads == 2 && revalidated != want {
				t.Fatalf("If-None-Match sent: %v, want %v", revalidated, want)
			}
			// A describe-only load: from the cache (within the TTL), without credentials.
			d, err := c.LoadTable(ctx, []string{"a"}, "t", false)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Config) != 0 || d.StorageCredentials != nil || string(d.Metadata) != string(r2.Metadata) {
				t.Fatalf("describe-only load %+v", d)
			}
			if n := tr.loads(); n != tc.wantLoads {
				t.Fatalf("describe-only load went to the remote: %d loads", n)
			}
			// Results are copies: changing one changes nothing cached.
			r2.Config["s3.access-key-id"] = "changed"
			if r3, _ := c.LoadTable(ctx, []string{"a"}, "t", true); r3.Config["s3.access-key-id"] == "changed" {
				t.Fatal("a caller changed the cache")
			}
		})
	}
}

// TestDescribeOnly: a describe-only load asks for no credentials, strips
// whatever the remote sends anyway, and the cache keeps none of it.
func TestDescribeOnly(t *testing.T) {
	clk := newClock()
	tr := newTableRemote(t, clk)
	c := newClient(t, tr.srv.URL, func(o *Options) { o.Now = clk.Now })
	d, err := c.LoadTable(context.Background(), []string{"a"}, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Config) != 0 || len(d.StorageCredentials) != 0 {
		t.Fatalf("describe-only load carries %+v", d)
	}
	if h := tr.requests()[0].Header.Get("X-Iceberg-Access-Delegation"); h != "" {
		t.Fatalf("describe-only load asked for %q", h)
	}
	e, ok := c.cache.get("table\x00/v1/p/namespaces/a/tables/t")
	if !ok {
		t.Fatal("not cached")
	}
	if cached := e.val.(*LoadTableResult); len(cached.Config) != 0 || cached.StorageCredentials != nil || e.delegated {
		t.Fatalf("cache keeps credentials of a describe-only load: %+v", cached)
	}
	// A load with credentials cannot be served by that entry.
	if _, err := c.LoadTable(context.Background(), []string{"a"}, "t", true); err != nil {
		t.Fatal(err)
	}
	if n := tr.loads(); n != 2 {
		t.Fatalf("%d loads", n)
	}
}

func TestCredentialHalfLife(t *testing.T) {
	now := time.UnixMilli(1_000_000_000_000)
	ms := func(d time.Duration) string { return fmt.Sprint(now.Add(d).UnixMilli()) }
	for _, tc := range []struct {
		name       string
		cfg        map[string]string
		creds      []StorageCredential
		has, known bool
		until      time.Duration
	}{
		{"none", map[string]string{"s3.endpoint": "x"}, nil, false, false, 0},
		{"s3 session", map[string]string{"s3.access-key-id": "a", "s3.session-token-expires-at-ms": ms(time.Hour)}, nil, true, true, 30 * time.Minute},
		{"earliest wins", map[string]string{"s3.session-token-expires-at-ms": ms(time.Hour)},
			[]StorageCredential{{Prefix: "s3://b", Config: map[string]string{"s3.secret-access-key": "s", "expiration-time": ms(20 * time.Minute)}}}, true, true, 10 * time.Minute},
		{"gcs rfc3339", map[string]string{"gcs.oauth2.token": "t", "gcs.oauth2.token-expires-at": now.Add(time.Hour).Format(time.RFC3339)}, nil, true, true, 30 * time.Minute},
		{"adls sas without expiry", map[string]string{"adls.sas-token.acct": "t"}, nil, true, false, 0},
		{"storage credential without expiry", nil, []StorageCredential{{Prefix: "s3://b", Config: map[string]string{}}}, true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			until, has, known := credentialHalfLife(tc.cfg, tc.creds, now)
			if has != tc.has || known != tc.known || (known && !until.Equal(now.Add(tc.until))) {
				t.Fatalf("until %v has %v known %v", until.Sub(now), has, known)
			}
		})
	}
}
