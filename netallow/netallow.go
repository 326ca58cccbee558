// Package netallow decides whether a client address may reach Floe: CIDR
// allowlists per listener (rest_allow_cidrs, s3_allow_cidrs,
// sql_allow_cidrs) and per principal (the principal's allowed_cidrs), and
// the client address of an HTTP request, which is the peer's address unless
// the peer is a configured trusted proxy, in which case X-Forwarded-For is
// believed as far as it runs through trusted proxies.
//
// A List is a set of address ranges kept sorted and merged, so that Contains
// is a binary search that allocates nothing. The empty List allows every
// address (no allowlist configured).
package netallow

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/floe-lake/floe"
)

// MaxEntries bounds the entries of one allowlist (listener or principal).
const MaxEntries = 1024

// maxEntryLen bounds one entry's text ("ffff:...:ffff/128" is 43 bytes).
const maxEntryLen = 64

// addrRange is an inclusive range of addresses of one family.
type addrRange struct{ lo, hi netip.Addr }

// List is a parsed allowlist. The zero List is empty and allows everything.
type List struct {
	ranges   []addrRange // sorted by lo, merged, IPv4 before IPv6
	prefixes []netip.Prefix
}

// Parse parses CIDR prefixes ("10.0.0.0/8", "2001:db8::/32") and bare
// addresses ("192.0.2.7", a /32 or /128). Host bits are allowed and
// ignored; IPv4-mapped IPv6 forms are taken as IPv4; zones are refused.
// Empty entries (from a trailing comma) are skipped. It fails with a
// floe.Invalid error naming the first bad entry.
func Parse(entries []string) (List, error) {
	var l List
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if len(l.prefixes) == MaxEntries {
			return List{}, floe.E(floe.Invalid, "network", "an allowlist has at most %d entries", MaxEntries)
		}
		p, err := parseEntry(e)
		if err != nil {
			return List{}, err
		}
		l.prefixes = append(l.prefixes, p)
	}
	l.build()
	return l, nil
}

// ParseString parses a comma-separated allowlist, as the FLOE_*_ALLOW_CIDRS
// variables and flags take it.
func ParseString(s string) (List, error) { return Parse(strings.Split(s, ",")) }

// Canonical parses entries and returns them in canonical form (masked
// prefixes, sorted, duplicates removed), for storing a principal's list.
func Canonical(entries []string) ([]string, error) {
	l, err := Parse(entries)
	if err != nil {
		return nil, err
	}
	return l.Strings(), nil
}

func parseEntry(e string) (netip.Prefix, error) {
	if len(e) > maxEntryLen {
		return netip.Prefix{}, floe.E(floe.Invalid, "network", "allowlist entry %.20q... is too long", e)
	}
	var p netip.Prefix
	if strings.Contains(e, "/") {
		var err error
		p, err = netip.ParsePrefix(e)
		if err != nil {
			return netip.Prefix{}, floe.E(floe.Invalid, "network", "allowlist entry %q is not a CIDR prefix or an address", e)
		}
	} else {
		a, err := netip.ParseAddr(e)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, floe.E(floe.Invalid, "network", "allowlist entry %q is not a CIDR prefix or an address", e)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// build sorts the prefixes, removes duplicates, and merges their ranges.
func (l *List) build() {
	slices.SortFunc(l.prefixes, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	l.prefixes = slices.Compact(l.prefixes)
	l.ranges = l.ranges[:0]
	for _, p := range l.prefixes {
		r := addrRange{lo: p.Addr(), hi: lastAddr(p)}
		if n := len(l.ranges); n > 0 {
			last := &l.ranges[n-1]
			if last.hi.Is4() == r.lo.Is4() && (r.lo.Compare(last.hi) <= 0 || last.hi.Next() == r.lo) {
				if r.hi.Compare(last.hi) > 0 {
					last.hi = r.hi
				}
				continue
			}
		}
		l.ranges = append(l.ranges, r)
	}
}

// lastAddr is the highest address of a masked prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	bits := p.Bits()
	off := 0
	if p.Addr().Is4() {
		off = 96
	}
	for i := off + bits; i < 128; i++ {
		b[i/8] |= 1 << (7 - uint(i%8))
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		return a.Unmap()
	}
	return a
}

// Empty reports whether the list has no entries (it then allows everything).
func (l List) Empty() bool { return len(l.ranges) == 0 }

// Len is the number of entries after removing duplicates.
func (l List) Len() int { return len(l.prefixes) }

// Contains reports whether a is in the list; an empty list contains every
// address, an invalid address is in no non-empty list. IPv4-mapped IPv6
// addresses match IPv4 entries. It allocates nothing and runs in
// O(log n).
func (l List) Contains(a netip.Addr) bool {
	if len(l.ranges) == 0 {
		return true
	}
	if !a.IsValid() {
		return false
	}
	a = a.Unmap().WithZone("")
	// The first range starting after a; the one before it is the only
	// candidate.
	i, _ := slices.BinarySearchFunc(l.ranges, a, func(r addrRange, a netip.Addr) int {
		if r.lo.Compare(a) <= 0 {
			return -1
		}
		return 1
	})
	if i == 0 {
		return false
	}
	r := l.ranges[i-1]
	return r.lo.Is4() == a.Is4() && a.Compare(r.hi) <= 0
}

// Strings returns the entries in canonical form, sorted.
func (l List) Strings() []string {
	out := make([]string, len(l.prefixes))
	for i, p := range l.prefixes {
		out[i] = p.String()
	}
	return out
}

// String renders the list as a comma-separated string.
func (l List) String() string { return strings.Join(l.Strings(), ",") }

// ContainsAny reports whether a is in the allowlist given as canonical
// entries (a principal's allowed_cidrs, or the list a vended credential
// carries). An empty list contains every address. Unparseable entries
// match nothing. It is linear in the entries, which are few, and
// allocates nothing.
func ContainsAny(entries []string, a netip.Addr) bool {
	if len(entries) == 0 {
		return true
	}
	if !a.IsValid() {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, e := range entries {
		p, err := parseEntry(e)
		if err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}

// AddrOf returns the address of a net.Addr (TCP or a "host:port" string),
// unmapped; the zero Addr when it has none.
func AddrOf(na net.Addr) netip.Addr {
	if na == nil {
		return netip.Addr{}
	}
	if t, ok := na.(*net.TCPAddr); ok {
		return t.AddrPort().Addr().Unmap().WithZone("")
	}
	return parseHostPort(na.String())
}

// parseHostPort parses "host:port" or a bare address.
func parseHostPort(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

type clientKey struct{}

// WithClient returns ctx carrying the client address a the listener
// resolved. Per-principal allowlists are checked against it.
func WithClient(ctx context.Context, a netip.Addr) context.Context {
	return context.WithValue(ctx, clientKey{}, a)
}

// ClientFrom returns the client address in ctx, if a listener put one there.
// In-process callers (the CLI, the demo loader) have none, and no
// per-principal allowlist applies to them.
func ClientFrom(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(clientKey{}).(netip.Addr)
	return a, ok
}

// CheckPrincipal refuses a principal whose allowlist does not contain the
// client address in ctx, with a floe.Forbidden error (entity "network")
// naming the address. Without a client address in ctx, or with an empty
// allowlist, it allows.
func CheckPrincipal(ctx context.Context, principal string, allowed []string) error {
	if len(allowed) == 0 {
		return nil
	}
	a, ok := ClientFrom(ctx)
	if !ok || ContainsAny(allowed, a) {
		return nil
	}
	return DeniedPrincipal(a, principal)
}

// DeniedPrincipal is the error for a principal used from outside its allowlist.
func DeniedPrincipal(a netip.Addr, principal string) error {
	return floe.E(floe.Forbidden, "network", "client address %s is not in principal %s's allowlist", addrText(a), principal)
}

// DeniedListener is the error for a client outside a listener's allowlist.
func DeniedListener(a netip.Addr, listener string) error {
	return floe.E(floe.Forbidden, "network", "client address %s is not in the %s listener's allowlist", addrText(a), listener)
}

func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return "(unknown)"
	}
	return a.String()
}
