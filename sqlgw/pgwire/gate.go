package pgwire

import (
	"container/list"
	"net"
	"time"
)

// gate holds the connections of one listener that have not authenticated
// yet, oldest first, in all and by client address. When a cap is reached
// the oldest waiting connection is evicted rather than the new one
// refused: a client that stalls at the password prompt then holds its
// slot only until enough newer connections arrive, so a flood of stalled
// logins cannot keep out a client that completes its handshake promptly
// (the flood must open a cap's worth of connections within that client's
// handshake, instead of once). The Server's mutex guards a gate.
type gate struct {
	max, perAddr int
	all          *list.List            // of *conn, oldest at the front
	byAddr       map[string]*list.List // of *conn by addrKey; no empty lists
}

// waiting is a conn's place in its gate.
type waiting struct {
	addr   string
	inAll  *list.Element
	inAddr *list.Element
}

func newGate(max, perAddr int) *gate {
	return &gate{max: max, perAddr: perAddr, all: list.New(), byAddr: map[string]*list.List{}}
}

// add registers c as waiting under the address key addr and returns the
// connections to evict, which it has already removed.
func (g *gate) add(c *conn, addr string) []*conn {
	c.gate = g
	l := g.byAddr[addr]
	if l == nil {
		l = list.New()
		g.byAddr[addr] = l
	}
	c.wait = waiting{addr: addr, inAll: g.all.PushBack(c), inAddr: l.PushBack(c)}
	var out []*conn
	if l.Len() > g.perAddr {
		out = append(out, l.Front().Value.(*conn))
		g.remove(out[0])
	}
	if g.all.Len() > g.max {
		out = append(out, g.all.Front().Value.(*conn))
		g.remove(out[len(out)-1])
	}
	return out
}

// remove takes c out of the gate (it authenticated, ended or was evicted);
// it does nothing when c is not in it.
func (g *gate) remove(c *conn) {
	if g == nil || c.wait.inAll == nil {
		return
	}
	g.all.Remove(c.wait.inAll)
	if l := g.byAddr[c.wait.addr]; l != nil {
		l.Remove(c.wait.inAddr)
		if l.Len() == 0 {
			delete(g.byAddr, c.wait.addr)
		}
	}
	c.wait.inAll, c.wait.inAddr = nil, nil
}

// evict ends a connection that waits to authenticate: its pending read or
// write fails at once. Called with the Server's mutex held.
func (c *conn) evict() {
	c.stop(errEvicted)
	c.nc().SetDeadline(time.Now())
}

// addrKey is the key of a client address for the per-address cap and the
// login limiter: the IP, or its /64 for IPv6 (one subscriber's usual
// allocation), "local" for a Unix socket.
func addrKey(a net.Addr) string {
	switch a := a.(type) {
	case *net.TCPAddr:
		if ip4 := a.IP.To4(); ip4 != nil {
			return ip4.String()
		}
		return a.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
	case *net.UnixAddr:
		return "local"
	case nil:
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// maxKeyUser bounds the part of a user name in a login limiter key, so
// that the limiter's memory does not grow with the (client-chosen) length
// of user names; principal names are much shorter.
const maxKeyUser = 128

// loginKey is the login limiter's key of user logging in from addr.
func loginKey(user string, addr net.Addr) string {
	if len(user) > maxKeyUser {
		user = user[:maxKeyUser]
	}
	return addrKey(addr) + "\x00" + user
}
