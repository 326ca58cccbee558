package netallow_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/netallow"
)

func mustParse(t testing.TB, s ...string) netallow.List {
	t.Helper()
	l, err := netallow.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestContains(t *testing.T) {
	tests := []struct {
		name  string
		list  []string
		addr  string
		allow bool
	}{
		{"empty allows all", nil, "203.0.113.9", true},
		{"in /8", []string{"10.0.0.0/8"}, "10.1.2.3", true},
		{"outside /8", []string{"10.0.0.0/8"}, "127.0.0.1", false},
		{"lower edge", []string{"10.0.0.0/8"}, "10.0.0.0", true},
		{"upper edge", []string{"10.0.0.0/8"}, "10.255.255.255", true},
		{"just above", []string{"10.0.0.0/8"}, "11.0.0.0", false},
		{"just below", []string{"10.0.0.0/8"}, "9.255.255.255", false},
		{"bare address", []string{"192.0.2.7"}, "192.0.2.7", true},
		{"bare address neighbour", []string{"192.0.2.7"}, "192.0.2.8", false},
		{"host bits ignored", []string{"192.0.2.7/24"}, "192.0.2.200", true},
		{"mapped client matches v4 entry", []string{"127.0.0.0/8"}, "::ffff:127.0.0.1", true},
		{"mapped entry matches v4 client", []string{"::ffff:10.0.0.0/104"}, "10.9.9.9", true},
		{"v6", []string{"2001:db8::/32"}, "2001:db8:1::5", true},
		{"v6 outside", []string{"2001:db8::/32"}, "2001:db9::1", false},
		{"v4 list refuses v6 loopback", []string{"127.0.0.0/8"}, "::1", false},
		{"v6 list refuses v4", []string{"::/0"}, "127.0.0.1", false},
		{"v4 all", []string{"0.0.0.0/0"}, "198.51.100.1", true},
		{"several, second", []string{"10.0.0.0/8", "192.168.0.0/16", "::1/128"}, "192.168.4.4", true},
		{"several, v6", []string{"10.0.0.0/8", "192.168.0.0/16", "::1/128"}, "::1", true},
		{"several, gap", []string{"10.0.0.0/8", "192.168.0.0/16"}, "172.16.0.1", false},
		{"adjacent merged", []string{"10.0.0.0/9", "10.128.0.0/9"}, "10.200.0.1", true},
		{"nested", []string{"10.0.0.0/8", "10.1.0.0/16"}, "10.2.0.1", true},
		{"invalid address", []string{"10.0.0.0/8"}, "", false},
		{"zone stripped", []string{"fe80::/10"}, "fe80::1%eth0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustParse(t, tt.list...)
			var a netip.Addr
			if tt.addr != "" {
				a = netip.MustParseAddr(tt.addr)
			}
			if got := l.Contains(a); got != tt.allow {
				t.Errorf("%v.Contains(%s) = %v, want %v", tt.list, tt.addr, got, tt.allow)
			}
			// The per-principal form agrees with the listener form.
			if got := netallow.ContainsAny(l.Strings(), a); got != tt.allow {
				t.Errorf("ContainsAny(%v, %s) = %v, want %v", l.Strings(), tt.addr, got, tt.allow)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"10.0.0.0/33", "10.0.0", "example.com", "fe80::1%eth0", "10.0.0.0/8/8", "::/129", "1.2.3.4:80",
		strings.Repeat("1", 100)} {
		_, err := netallow.Parse([]string{in})
		if floe.KindOf(err) != floe.Invalid || !strings.Contains(err.Error(), "allowlist entry") {
			t.Errorf("Parse(%q) = %v, want an Invalid error naming the entry", in, err)
		}
	}
	many := make([]string, netallow.MaxEntries+1)
	for i := range many {
		many[i] = netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}).String()
	}
	if _, err := netallow.Parse(many[:netallow.MaxEntries]); err != nil {
		t.Fatalf("Parse of %d entries: %v", netallow.MaxEntries, err)
	}
	if _, err := netallow.Parse(many); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("Parse of %d entries = %v, want Invalid (the bound)", len(many), err)
	}
}

func TestCanonical(t *testing.T) {
	got, err := netallow.Canonical([]string{" 192.0.2.7/24", "10.0.0.0/8", "", "10.0.0.0/8", "2001:DB8::/32", "::ffff:1.2.3.4"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1.2.3.4/32", "10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32"}
	if !slices.Equal(got, want) {
		t.Fatalf("Canonical = %v, want %v", got, want)
	}
	l, err := netallow.ParseString("10.0.0.0/8, 127.0.0.1,")
	if err != nil || l.String() != "10.0.0.0/8,127.0.0.1/32" || l.Len() != 2 {
		t.Fatalf("ParseString = %v %v", l, err)
	}
}

func TestClientAddr(t *testing.T) {
	proxies := []string{"127.0.0.1", "10.0.0.0/8"}
	tests := []struct {
		name    string
		trusted []string
		remote  string
		xff     []string
		want    string
	}{
		{"no proxies: header ignored", nil, "127.0.0.1:5000", []string{"203.0.113.5"}, "127.0.0.1"},
		{"untrusted peer: header ignored", proxies, "198.51.100.1:5000", []string{"203.0.113.5"}, "198.51.100.1"},
		{"trusted peer", proxies, "127.0.0.1:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"spoofed left entry not believed", proxies, "127.0.0.1:5000", []string{"10.9.9.9, 203.0.113.5"}, "203.0.113.5"},
		{"chain of trusted proxies", proxies, "127.0.0.1:5000", []string{"203.0.113.5, 10.1.1.1, 10.2.2.2"}, "203.0.113.5"},
		{"several header lines", proxies, "127.0.0.1:5000", []string{"203.0.113.5", "10.1.1.1"}, "203.0.113.5"},
		{"all trusted: leftmost", proxies, "127.0.0.1:5000", []string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{"malformed entry stops at the proxy", proxies, "127.0.0.1:5000", []string{"203.0.113.5, bogus"}, "127.0.0.1"},
		{"entry with port", proxies, "127.0.0.1:5000", []string{"203.0.113.5:4711"}, "203.0.113.5"},
		{"bracketed v6", proxies, "127.0.0.1:5000", []string{"[2001:db8::1]"}, "2001:db8::1"},
		{"bracketed v6 with port", proxies, "127.0.0.1:5000", []string{"[2001:db8::1]:4711"}, "2001:db8::1"},
		{"no header", proxies, "127.0.0.1:5000", nil, "127.0.0.1"},
		{"v6 peer", nil, "[::1]:5000", nil, "::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := netallow.ClientAddr(r, mustParse(t, tt.trusted...)); got.String() != tt.want {
				t.Errorf("ClientAddr = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestClientAddrHopBound: a chain longer than MaxForwardedHops through
// trusted proxies stops at the bound.
func TestClientAddrHopBound(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	var hops []string
	for i := range netallow.MaxForwardedHops + 5 {
		hops = append(hops, netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}).String())
	}
	r.Header.Set("X-Forwarded-For", strings.Join(hops, ","))
	got := netallow.ClientAddr(r, mustParse(t, "127.0.0.1", "10.0.0.0/8"))
	if want := hops[len(hops)-netallow.MaxForwardedHops]; got.String() != want {
		t.Fatalf("ClientAddr = %s, want %s (%d hops back)", got, want, netallow.MaxForwardedHops)
	}
}

func TestGuard(t *testing.T) {
	var denied error
	g := &netallow.Guard{Listener: "rest", Allow: mustParse(t, "10.0.0.0/8"), TrustedProxies: mustParse(t, "127.0.0.1"),
		Deny: func(w http.ResponseWriter, _ *http.Request, _ netip.Addr, err error) {
			denied = err
			w.WriteHeader(403)
		}}
	var seen netip.Addr
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen, _ = netallow.ClientFrom(r.Context()) }))
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("X-Forwarded-For", "10.1.2.3")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || seen.String() != "10.1.2.3" {
		t.Fatalf("inside: status %d, client %s", w.Code, seen)
	}
	r.Header.Set("X-Forwarded-For", "192.0.2.1")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 403 || denied == nil || floe.KindOf(denied) != floe.Forbidden ||
		denied.Error() != "client address 192.0.2.1 is not in the rest listener's allowlist" {
		t.Fatalf("outside: status %d, err %v", w.Code, denied)
	}
}

func TestCheckPrincipal(t *testing.T) {
	ctx := context.Background()
	if err := netallow.CheckPrincipal(ctx, "etl", []string{"10.0.0.0/8"}); err != nil {
		t.Fatalf("no client address in ctx (in-process): %v", err)
	}
	out := netallow.WithClient(ctx, netip.MustParseAddr("127.0.0.1"))
	if err := netallow.CheckPrincipal(out, "etl", nil); err != nil {
		t.Fatalf("empty allowlist: %v", err)
	}
	err := netallow.CheckPrincipal(out, "etl", []string{"10.0.0.0/8"})
	if floe.KindOf(err) != floe.Forbidden || err.Error() != "client address 127.0.0.1 is not in principal etl's allowlist" {
		t.Fatalf("outside: %v", err)
	}
	in := netallow.WithClient(ctx, netip.MustParseAddr("10.3.3.3"))
	if err := netallow.CheckPrincipal(in, "etl", []string{"10.0.0.0/8"}); err != nil {
		t.Fatalf("inside: %v", err)
	}
}

// TestContainsAllocs: the listener check allocates nothing.
func TestContainsAllocs(t *testing.T) {
	l := mustParse(t, "10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32", "172.16.0.0/12")
	a := netip.MustParseAddr("172.20.1.1")
	if n := testing.AllocsPerRun(100, func() { _ = l.Contains(a) }); n != 0 {
		t.Fatalf("Contains allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = netallow.ContainsAny([]string{"10.0.0.0/8", "172.16.0.0/12"}, a) }); n != 0 {
		t.Fatalf("ContainsAny allocates %v times", n)
	}
}

func BenchmarkContains(b *testing.B) {
	var entries []string
	for i := range 1000 {
		entries = append(entries, netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}).String()+"/24")
	}
	l := mustParse(b, entries...)
	a := netip.MustParseAddr("10.3.200.1")
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Contains(a)
	}
}
