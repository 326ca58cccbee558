package netlimit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve runs a Server for h with lim on a loopback port until the test ends.
func serve(t *testing.T, lim Limits, h http.Handler) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New("test", h, lim, nil)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s, ln.Addr().String()
}

// readAll answers with the number of body bytes it read, or 400.
var readAll = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprint(w, n)
})

// dial connects and writes head.
func dial(t *testing.T, addr, head string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c
}

// closed reports whether the server closes c within d (reading and
// discarding whatever it sends first).
func closed(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(asNetErr(err, &ne) && ne.Timeout())
}

func asNetErr(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	if ok {
		*ne = e
	}
	return ok
}

// waitFor polls cond for up to two seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestBodyDeadline(t *testing.T) {
	lim := Limits{BodyTimeout: 300 * time.Millisecond, BodyMinRate: 1000}
	_, addr := serve(t, lim, readAll)
	head := "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
	for _, tc := range []struct {
		name  string
		every time.Duration // 0: stall
		chunk int
		cut   bool
	}{
		{"stalled", 0, 0, true},
		{"below the minimum rate", 50 * time.Millisecond, 10, true}, // 200 B/s
		{"above the minimum rate", 50 * time.Millisecond, 500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := dial(t, addr, strings.Replace(head, "100000", "5000", 1))
			start := time.Now()
			gone := make(chan bool, 1)
			go func() {
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode == 200 && string(b) == "5000" {
						gone <- false
						return
					}
					// Refused: the connection must be closed, not kept for a
					// next "request" made of the rest of the body.
					gone <- closed(c, 2*time.Second)
					return
				}
				gone <- true
			}()
			var cut bool
			answered := false
		send:
			for sent := 0; tc.every > 0 && sent < 5000; sent += tc.chunk {
				if _, err := c.Write([]byte(strings.Repeat("a", tc.chunk))); err != nil {
					break
				}
				select {
				case cut = <-gone:
					answered = true
					break send
				case <-time.After(tc.every):
				}
			}
			if answered {
				if cut != tc.cut {
					t.Fatalf("cut %v after %s, want %v", cut, time.Since(start), tc.cut)
				}
				return
			}
			select {
			case cut := <-gone:
				if cut != tc.cut {
					t.Fatalf("cut %v after %s, want %v", cut, time.Since(start), tc.cut)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no answer after %s", time.Since(start))
			}
		})
	}
}

func TestHeaderTimeoutAndSize(t *testing.T) {
	_, addr := serve(t, Limits{HeaderTimeout: 200 * time.Millisecond, MaxHeaderBytes: 4096}, readAll)
	c := dial(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n")
	if !closed(c, 3*time.Second) {
		t.Error("slow headers not cut by the header timeout")
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 8192))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("8 KiB header with a 4 KiB limit: %d", resp.StatusCode)
	}
}

func TestIdleTimeout(t *testing.T) {
	_, addr := serve(t, Limits{IdleTimeout: 200 * time.Millisecond}, readAll)
	c := dial(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	}
	if !closed(c, 3*time.Second) {
		t.Error("idle keep-alive connection not closed by the idle timeout")
	}
}

// TestPendingPerIP: over MaxPendingPerIP connections still sending a
// request, the oldest is closed.
func TestPendingPerIP(t *testing.T) {
	s, addr := serve(t, Limits{MaxConns: 100, MaxPendingPerIP: 3}, readAll)
	var cs []net.Conn
	for range 3 {
		cs = append(cs, dial(t, addr, "GET / HTTP/1.1\r\n"))
	}
	waitFor(t, "three pending", func() bool { return s.Stats().Pending == 3 })
	dial(t, addr, "GET / HTTP/1.1\r\n")
	if !closed(cs[0], 2*time.Second) {
		t.Fatal("the oldest pending connection was not closed")
	}
	for _, c := range cs[1:] {
		if closed(c, 50*time.Millisecond) {
			t.Fatal("a newer pending connection was closed")
		}
	}
	if st := s.Stats(); st.Pending != 3 || st.Evicted != 1 {
		t.Fatalf("stats %+v, want 3 pending, 1 evicted", st)
	}
}

// TestMaxConns: at the cap, a new connection displaces the oldest idle one
// first, then the oldest pending one, and is refused when all are served.
func TestMaxConns(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-release
		}
		fmt.Fprint(w, "ok")
	})
	s, addr := serve(t, Limits{MaxConns: 3, MaxPendingPerIP: 3}, h)
	defer close(release)
	idleC := dial(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(idleC), nil); err != nil {
		t.Fatal(err)
	}
	pendC := dial(t, addr, "GET / HTTP/1.1\r\n")
	busy := dial(t, addr, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, "three held", func() bool { st := s.Stats(); return st.Open == 3 && st.Pending == 1 })

	second := dial(t, addr, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	if !closed(idleC, 2*time.Second) {
		t.Fatal("the idle connection was not displaced first")
	}
	if closed(pendC, 50*time.Millisecond) {
		t.Fatal("a pending connection was displaced while an idle one remained")
	}
	waitFor(t, "second served", func() bool { return s.Stats().Pending == 1 })
	third := dial(t, addr, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	if !closed(pendC, 2*time.Second) {
		t.Fatal("the pending connection was not displaced")
	}
	waitFor(t, "third served", func() bool { return s.Stats().Pending == 0 })
	refused := dial(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if !closed(refused, 2*time.Second) {
		t.Fatal("a connection over the cap was admitted while all were served")
	}
	for _, c := range []net.Conn{busy, second, third} {
		if closed(c, 20*time.Millisecond) {
			t.Fatal("a connection being served was closed")
		}
	}
	if st := s.Stats(); st.Open != 3 || st.Evicted != 2 || st.Refused != 1 {
		t.Fatalf("stats %+v, want 3 open, 2 evicted, 1 refused", st)
	}
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:5000", "127.0.0.1"},
		{"[::ffff:10.0.0.1]:80", "10.0.0.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := clientKey(a); got != tc.want {
			t.Errorf("clientKey(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
