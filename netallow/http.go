package netallow

import (
	"net/http"
	"net/netip"
	"strings"
)

// MaxForwardedHops bounds how many X-Forwarded-For entries ClientAddr walks
// back through trusted proxies; a longer chain is cut there, and the
// address reached is taken as the client's.
const MaxForwardedHops = 16

// ClientAddr returns the address of the client of r. It is the peer's
// address unless the peer is in trusted (the trusted proxies): then the
// X-Forwarded-For entries are read from the right, skipping those that
// are trusted proxies too, and the first one that is not is the client.
// When every entry is a trusted proxy the leftmost is the client; a
// malformed entry ends the walk at the proxy that added it (the last
// trusted address). With an empty trusted list X-Forwarded-For is never
// read. The zero Addr means the peer's address could not be parsed.
func ClientAddr(r *http.Request, trusted List) netip.Addr {
	peer := parseHostPort(r.RemoteAddr)
	if trusted.Empty() || !peer.IsValid() || !trusted.Contains(peer) {
		return peer
	}
	client := peer
	hops := 0
	values := r.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for v != "" {
			var e string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				e, v = v[j+1:], v[:j]
			} else {
				e, v = v, ""
			}
			a, ok := parseForwarded(strings.TrimSpace(e))
			if !ok {
				return client
			}
			client = a
			hops++
			if !trusted.Contains(a) || hops >= MaxForwardedHops {
				return client
			}
		}
	}
	return client
}

// parseForwarded parses one X-Forwarded-For entry: an address, an
// address with a port ("192.0.2.1:4711", "[2001:db8::1]:4711") or a
// bracketed IPv6 address.
func parseForwarded(e string) (netip.Addr, bool) {
	if e == "" {
		return netip.Addr{}, false
	}
	if a, err := netip.ParseAddr(e); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(e); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	if len(e) > 2 && e[0] == '[' && e[len(e)-1] == ']' {
		if a, err := netip.ParseAddr(e[1 : len(e)-1]); err == nil && a.Zone() == "" && a.Is6() {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// Guard is the allowlist of one HTTP listener. Its Wrap resolves each
// request's client address, refuses one outside the allowlist before the
// handler reads the body, and passes the address on in the request's
// context (see ClientFrom) for the per-principal checks.
type Guard struct {
	// Listener names the listener in errors and audit events ("rest", "s3").
	Listener string
	// Allow is the listener's allowlist; empty allows every address.
	Allow List
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies List
	// Deny answers a refused request in the listener's protocol; err is a
	// floe.Forbidden error naming the address and the listener. It is
	// also where the refusal is audited.
	Deny func(w http.ResponseWriter, r *http.Request, client netip.Addr, err error)
}

// Wrap returns h behind the guard.
func (g *Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := ClientAddr(r, g.TrustedProxies)
		if !g.Allow.Contains(a) {
			g.Deny(w, r, a, DeniedListener(a, g.Listener))
			return
		}
		h.ServeHTTP(w, r.WithContext(WithClient(r.Context(), a)))
	})
}
