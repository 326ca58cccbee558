package app_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sigv4"
)

// limits returns a testkit option that sets the HTTP listener limits.
func limits(f func(*app.HTTPLimits)) testkit.Option {
	return func(c *app.Config) { f(&c.HTTP) }
}

// hostOf is the host:port of a base URL.
func hostOf(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// closedWithin dials addr, writes head, then trickles one byte of trickle
// every interval (never, if trickle is empty) and reports how long the
// server took to close the connection, or max if it had not by then.
func closedWithin(t *testing.T, addr, head, trickle string, interval, max time.Duration) time.Duration {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.SetReadDeadline(start.Add(max))
		_, _ = io.Copy(io.Discard, c) // returns at EOF, reset or our deadline
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-done:
			return time.Since(start)
		case <-tick.C:
			if i < len(trickle) {
				_, _ = c.Write([]byte{trickle[i]})
			}
		}
	}
}

// TestHTTPBodyDeadline: a request body that stalls, or trickles slower than
// the minimum rate, is cut off by the body deadline on every listener; the
// token endpoint, the REST catalog, the management API and S3 alike.
func TestHTTPBodyDeadline(t *testing.T) {
	f := testkit.Start(t, limits(func(l *app.HTTPLimits) { l.BodyTimeout = time.Second }))
	cat, s3 := hostOf(t, f.URL), hostOf(t, f.App.S3URL())
	form := "grant_type=client_credentials&client_id=test-admin&client_secret=test-admin-secret&scope=catalog"
	token := "POST /v1/oauth/tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
		fmt.Sprint(len(form)) + "\r\n\r\n"
	tok := f.Token(t)
	commit := "POST " + f.P("/namespaces") + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok +
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
	mgmt := "POST /api/v1/principals HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok +
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
	// The S3 caller holds write credentials: its body reaches the handler.
	tbl := f.CreateTable(t, "ns", "t")
	r := f.Do(t, "GET", f.P("/namespaces/ns/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	r.JSON(t, &tbl)
	pu := presign(t, f, tbl, "PUT", strings.TrimPrefix(tbl.Metadata.Location, "s3://")+"/data/slow.bin")
	put := "PUT " + pu.RequestURI() + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
	for _, tc := range []struct {
		name, addr, head, trickle string
	}{
		{"token stalled", cat, token, ""},
		{"token trickled", cat, token, form},
		{"commit stalled", cat, commit, ""},
		{"management stalled", cat, mgmt, ""},
		{"s3 put stalled", s3, put, ""},
		{"s3 put trickled", s3, put, strings.Repeat("x", 1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if d := closedWithin(t, tc.addr, tc.head, tc.trickle, 50*time.Millisecond, 6*time.Second); d >= 6*time.Second {
				t.Fatalf("connection still open after %s with a 1s body timeout", d)
			}
		})
	}
}

// TestHTTPHeaderLimits: headers that trickle are cut off by the header
// timeout, and a header block over MaxHeaderBytes is refused.
func TestHTTPHeaderLimits(t *testing.T) {
	f := testkit.Start(t, limits(func(l *app.HTTPLimits) { l.HeaderTimeout = 500 * time.Millisecond; l.MaxHeaderBytes = 8 << 10 }))
	for _, addr := range []string{hostOf(t, f.URL), hostOf(t, f.App.S3URL())} {
		if d := closedWithin(t, addr, "GET /v1/config HTTP/1.1\r\n", strings.Repeat("X-A: b\r\n", 100), 20*time.Millisecond, 5*time.Second); d >= 5*time.Second {
			t.Errorf("%s: slow headers still open after %s with a 500ms header timeout", addr, d)
		}
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/config", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 16<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: 16 KiB of headers with an 8 KiB limit: status %d, want 431", addr, resp.StatusCode)
		}
	}
}

// flood holds n connections to addr, each sending head and then one byte
// of a body every 500ms; a connection the server closes is replaced at
// once, until stop. open counts the connections held.
type flood struct {
	open, dialed, closed atomic.Int64
	stop                 chan struct{}
	wg                   sync.WaitGroup
}

func startFlood(addr, head string, n int) *flood {
	fl := &flood{stop: make(chan struct{})}
	for range n {
		fl.wg.Go(func() {
			for {
				select {
				case <-fl.stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				fl.dialed.Add(1)
				fl.open.Add(1)
				_, _ = io.WriteString(c, head)
				gone := make(chan struct{})
				go func() {
					_, _ = io.Copy(io.Discard, c)
					close(gone)
				}()
				tick := time.NewTicker(500 * time.Millisecond)
			hold:
				for {
					select {
					case <-fl.stop:
						break hold
					case <-gone:
						fl.closed.Add(1)
						break hold
					case <-tick.C:
						_, _ = c.Write([]byte("a"))
					}
				}
				tick.Stop()
				_ = c.Close()
				<-gone
				fl.open.Add(-1)
				time.Sleep(20 * time.Millisecond) // reconnect, but do not spin
			}
		})
	}
	return fl
}

func (fl *flood) end() { close(fl.stop); fl.wg.Wait() }

// TestHTTPFloodCapped: 1,000 slow-body POSTs to the token endpoint (and
// slow headers, and slow S3 PUT bodies) from one IP are held to the
// listener's caps, and while the flood runs an admin obtains a token and
// loads a table at once.
func TestHTTPFloodCapped(t *testing.T) {
	const maxConns, perIP = 128, 64
	f := testkit.Start(t, limits(func(l *app.HTTPLimits) { l.MaxConns, l.MaxPendingPerIP = maxConns, perIP }))
	f.CreateTable(t, "ns", "t")
	tbl := f.Do(t, "GET", f.P("/namespaces/ns/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	var loaded testkit.Table
	tbl.JSON(t, &loaded)
	cat, s3 := hostOf(t, f.URL), hostOf(t, f.App.S3URL())
	// The S3 flood holds write credentials: its bodies reach the handler.
	put := presign(t, f, loaded, "PUT", strings.TrimPrefix(loaded.Metadata.Location, "s3://")+"/data/flood.bin")
	for _, tc := range []struct {
		name, addr, head string
		n                int
	}{
		{"slow token bodies", cat, "POST /v1/oauth/tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n", 1000},
		{"slow headers", cat, "GET /v1/config HTTP/1.1\r\nHost: x\r\n", 500},
		{"slow s3 bodies", s3, "PUT " + put.RequestURI() + " HTTP/1.1\r\nHost: " + put.Host + "\r\nContent-Length: 1000000\r\n\r\n", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := startFlood(tc.addr, tc.head, tc.n)
			defer fl.end()
			deadline := time.Now().Add(20 * time.Second)
			for fl.dialed.Load() < int64(tc.n) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second) // let the server accept what the kernel queued
			// The flood is running: an admin is served at once.
			start := time.Now()
			tok := f.TokenFor(t, f.Cred.ClientID, f.Cred.Secret)
			tokTime := time.Since(start)
			r := f.DoAs(t, tok, "GET", f.P("/namespaces/ns/tables/t"), nil)
			if r.Status != 200 {
				t.Fatalf("loadTable during the flood: %d %s", r.Status, r.Body)
			}
			serve := time.Since(start)
			getObj := time.Duration(0)
			if tc.addr == s3 {
				getObj = presignedGet(t, f, loaded, loaded.MetadataLocation)
			}
			var held, pending int
			for range 10 {
				cs, ss := f.App.HTTPStats()
				if tc.addr == s3 {
					cs = ss
				}
				held, pending = max(held, cs.Open), max(pending, cs.Pending)
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("dialed %d, closed by the server %d; the server held at most %d (%d pending); token in %s, token+loadTable in %s, S3 GET %s",
				fl.dialed.Load(), fl.closed.Load(), held, pending, tokTime, serve, getObj)
			if serve > 3*time.Second {
				t.Errorf("token and loadTable took %s during the flood", serve)
			}
			// A flood on the same 2-core host dials faster than it is accepted,
			// so the kernel's accept queue overflows and a new client's SYN
			// may be retried (1s, 3s): the S3 GET is bounded, not instant.
			if getObj > 10*time.Second {
				t.Errorf("S3 GET took %s during the flood", getObj)
			}
			// The flood comes from one IP, so the server holds no more than
			// the per-IP cap of its unfinished requests.
			if held > maxConns || pending > perIP {
				t.Errorf("the server held %d connections, %d pending; want at most %d, %d", held, pending, maxConns, perIP)
			}
			if fl.closed.Load() == 0 {
				t.Error("the server closed none of the flood's connections")
			}
		})
	}
}

// presign returns a URL presigned with the credentials vended with tbl for
// method on bucket/key of the embedded S3 endpoint.
func presign(t *testing.T, f *testkit.Floe, tbl testkit.Table, method, key string) *url.URL {
	t.Helper()
	cfg := tbl.Config
	creds := sigv4.Credentials{AccessKeyID: cfg["s3.access-key-id"], SecretAccessKey: cfg["s3.secret-access-key"], SessionToken: cfg["s3.session-token"]}
	if creds.AccessKeyID == "" {
		t.Fatalf("no vended credentials: %v", cfg)
	}
	req, err := http.NewRequest(method, f.App.S3URL()+"/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sigv4.Presign(req, creds, cfg["client.region"], "s3", time.Now(), time.Hour, sigv4.SignOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// presignedGet reads an object with the credentials vended with tbl and
// reports how long it took, failing the test on error.
func presignedGet(t *testing.T, f *testkit.Floe, tbl testkit.Table, location string) time.Duration {
	t.Helper()
	key := strings.TrimPrefix(location, "s3://")
	u := presign(t, f, tbl, "GET", key)
	start := time.Now()
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", key, resp.StatusCode, err)
	}
	return time.Since(start)
}

// TestS3UploadAtRateOutlivesBodyTimeout: the body deadline is a minimum
// rate, not a total: an upload that takes several body timeouts at a
// reasonable rate completes, while one below the minimum rate is cut.
func TestS3UploadAtRateOutlivesBodyTimeout(t *testing.T) {
	f := testkit.Start(t, limits(func(l *app.HTTPLimits) { l.BodyTimeout = time.Second; l.BodyMinRate = 64 << 10 }))
	f.CreateTable(t, "ns", "t")
	r := f.Do(t, "GET", f.P("/namespaces/ns/tables/t"), nil, "X-Iceberg-Access-Delegation", "vended-credentials")
	var tbl testkit.Table
	r.JSON(t, &tbl)
	key := strings.TrimPrefix(tbl.Metadata.Location, "s3://") + "/data/upload.bin"
	// 384 KiB at 128 KiB/s: three seconds, three body timeouts.
	const size = 384 << 10
	u := presign(t, f, tbl, "PUT", key)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, size)
	chunk := make([]byte, 16<<10)
	for sent := 0; sent < size; sent += len(chunk) {
		if _, err := c.Write(chunk); err != nil {
			t.Fatalf("upload at 128 KiB/s cut after %d bytes, %s: %v", sent, time.Since(start), err)
		}
		time.Sleep(125 * time.Millisecond)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("upload at 128 KiB/s: no response after %s: %v", time.Since(start), err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload at 128 KiB/s: status %d after %s", resp.StatusCode, time.Since(start))
	}
	t.Logf("384 KiB at 128 KiB/s uploaded in %s with a 1s body timeout", time.Since(start))

	// The same upload at 4 bytes/s falls below the minimum rate and is cut
	// soon after the grace period.
	u = presign(t, f, tbl, "PUT", key)
	head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, size)
	if d := closedWithin(t, u.Host, head, strings.Repeat("x", 1000), time.Millisecond*250, 8*time.Second); d >= 8*time.Second {
		t.Fatalf("an upload at 4 B/s was still open after %s", d)
	}
}
