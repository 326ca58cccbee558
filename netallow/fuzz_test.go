package netallow_test

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/floe-lake/floe/netallow"
)

// FuzzParse: any list text parses or fails with an error, never panics;
// a parsed list agrees with a linear scan of its own canonical entries,
// and its canonical form parses back to the same list.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "10.0.0.0/8,192.168.0.0/16,::1", "::ffff:1.2.3.4/120", "0.0.0.0/0,::/0", "1.2.3.4/33", ",,", "fe80::%x"} {
		f.Add(s, "10.1.2.3")
	}
	f.Fuzz(func(t *testing.T, list, addr string) {
		l, err := netallow.ParseString(list)
		if err != nil {
			return
		}
		back, err := netallow.Parse(l.Strings())
		if err != nil || back.String() != l.String() {
			t.Fatalf("canonical %q does not parse back: %v %q", l.String(), err, back.String())
		}
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return
		}
		if got, want := l.Contains(a), netallow.ContainsAny(l.Strings(), a); got != want {
			t.Fatalf("%q: Contains(%s) = %v, linear scan = %v", l.String(), a, got, want)
		}
	})
}

// FuzzClientAddr: an X-Forwarded-For header from a trusted proxy never
// yields an address that is neither the peer nor one of the header's
// entries, and never panics.
func FuzzClientAddr(f *testing.F) {
	for _, s := range []string{"203.0.113.5", "10.0.0.1, 203.0.113.5", "[2001:db8::1]:80", "bogus,,", " , ", "1.2.3.4:99999"} {
		f.Add(s)
	}
	trusted, _ := netallow.Parse([]string{"127.0.0.1", "10.0.0.0/8"})
	f.Fuzz(func(t *testing.T, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "127.0.0.1:1"
		r.Header.Set("X-Forwarded-For", xff)
		got := netallow.ClientAddr(r, trusted)
		if got.String() == "127.0.0.1" {
			return
		}
		for _, e := range strings.Split(xff, ",") {
			e = strings.Trim(strings.TrimSpace(e), "[]")
			if a, err := netip.ParseAddr(e); err == nil && a.Unmap() == got {
				return
			}
		}
		for _, e := range strings.Split(xff, ",") {
			if ap, err := netip.ParseAddrPort(strings.TrimSpace(e)); err == nil && ap.Addr().Unmap() == got {
				return
			}
		}
		t.Fatalf("ClientAddr(%q) = %s, not the peer and not in the header", xff, got)
	})
}
