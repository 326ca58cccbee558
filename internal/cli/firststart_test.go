package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a serving command writing and a
// test reading at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serving is a `floe serve` running in process.
type serving struct {
	out    *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// startServe runs `floe serve args...` in the background; it stops at cleanup.
func startServe(t *testing.T, args ...string) *serving {
	t.Helper()
	s := &serving{out: &syncBuffer{}, done: make(chan error, 1)}
	root := Root(s.out, &syncBuffer{}, func(string) string { return "" })
	root.SetArgs(append([]string{"serve", "--log-level", "error", "--maintenance=false", "--audit-export-interval", "0", "--admin-listen", "off"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { s.done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Error("floe serve did not stop")
		}
	})
	return s
}

// waitRunning waits until the server printed "Press Ctrl-C" or failed.
func (s *serving) waitRunning(t *testing.T) (string, error) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-s.done:
			s.done <- err // for cleanup
			return s.out.String(), err
		case <-deadline:
			t.Fatalf("floe serve neither ran nor failed: %q", s.out.String())
		case <-time.After(20 * time.Millisecond):
			if out := s.out.String(); strings.Contains(out, "Press Ctrl-C") {
				return out, nil
			}
		}
	}
}

var (
	clientIDLine     = regexp.MustCompile(`(?m)^\s*client_id:\s+(\S+)`)
	clientSecretLine = regexp.MustCompile(`(?m)^\s*client_secret:\s+(\S+)`)
	catalogLine      = regexp.MustCompile(`Iceberg REST catalog:\s+(\S+)`)
)

// clientCredentialsToken fetches a token at base with the client
// credentials grant and returns its HTTP status.
func clientCredentialsToken(t *testing.T, base, id, secret string) int {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}
	resp, err := http.PostForm(base+"/v1/oauth/tokens", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err == nil && resp.StatusCode == 200 && tok.AccessToken == "" {
		t.Fatal("token endpoint answered 200 without a token")
	}
	return resp.StatusCode
}

// TestFirstStartListenerTaken: a first `floe serve` that fails because a
// listener's port is taken leaves no admin behind, so that the next start
// on free ports creates the admin and prints a credential that works at
// the token endpoint. Before the fix the admin was created before the
// listeners were bound, the failed start never printed it and the next
// start printed nothing: the newcomer was locked out.
func TestFirstStartListenerTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().String()
	for _, c := range []struct {
		name string
		args []string // the listener flags of the failing start
	}{
		{"catalog port taken", []string{"--listen", busy, "--s3-listen", "127.0.0.1:0", "--sql-listen", "127.0.0.1:0"}},
		{"s3 port taken", []string{"--listen", "127.0.0.1:0", "--s3-listen", busy, "--sql-listen", "127.0.0.1:0"}},
		{"sql port taken", []string{"--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--sql-listen", busy}},
		{"admin port taken", []string{"--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--sql-listen", "127.0.0.1:0", "--admin-listen", busy}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			first := startServe(t, append([]string{"--data-dir", dir}, c.args...)...)
			out, err := first.waitRunning(t)
			if err == nil || !strings.Contains(err.Error(), "listen") {
				t.Fatalf("first start with %s: %v, want a listen error (%q)", busy, err, out)
			}
			if strings.Contains(out, "client_secret") {
				t.Fatalf("the failed start printed a credential: %q", out)
			}
			second := startServe(t, "--data-dir", dir, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--sql-listen", "127.0.0.1:0")
			out, err = second.waitRunning(t)
			if err != nil {
				t.Fatalf("second start: %v (%q)", err, out)
			}
			id, secret, base := clientIDLine.FindStringSubmatch(out), clientSecretLine.FindStringSubmatch(out), catalogLine.FindStringSubmatch(out)
			if id == nil || secret == nil || base == nil {
				t.Fatalf("second start printed no admin credential: %q", out)
			}
			if st := clientCredentialsToken(t, base[1], id[1], secret[1]); st != 200 {
				t.Fatalf("token with the printed credential: status %d", st)
			}
			if st := clientCredentialsToken(t, base[1], id[1], secret[1]+"x"); st == 200 {
				t.Fatal("a wrong secret got a token")
			}
		})
	}
}

// TestPrincipalCreateAdminOffline: `floe principal create NAME --admin` on
// the data directory of a server whose admin credential is lost gives a
// new administrator that can log in at once, while the server runs, and
// after a restart, which creates no further admin.
func TestPrincipalCreateAdminOffline(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, "--data-dir", dir, "--listen", "127.0.0.1:0", "--s3-listen", "off", "--sql-listen", "off")
	out, err := srv.waitRunning(t)
	if err != nil {
		t.Fatal(err)
	}
	base := catalogLine.FindStringSubmatch(out)
	out, err = run(t, "principal", "create", "rescue", "--admin", "--data-dir", dir, "--log-level", "error")
	if err != nil {
		t.Fatal(err)
	}
	id, secret := clientIDLine.FindStringSubmatch(out), clientSecretLine.FindStringSubmatch(out)
	if id == nil || secret == nil {
		t.Fatalf("no credential printed: %q", out)
	}
	if st := clientCredentialsToken(t, base[1], id[1], secret[1]); st != 200 {
		t.Fatalf("token of the rescue admin from the running server: status %d", st)
	}
	srv.cancel()
	srv.done <- <-srv.done
	again := startServe(t, "--data-dir", dir, "--listen", "127.0.0.1:0", "--s3-listen", "off", "--sql-listen", "off")
	out, err = again.waitRunning(t)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "First admin credential") {
		t.Errorf("a later start created another admin: %q", out)
	}
	base = catalogLine.FindStringSubmatch(out)
	if st := clientCredentialsToken(t, base[1], id[1], secret[1]); st != 200 {
		t.Fatalf("token of the rescue admin after a restart: status %d", st)
	}
	out, err = run(t, "principal", "list", "--data-dir", dir, "--log-level", "error")
	if err != nil || !regexp.MustCompile(`(?m)^rescue\s+\S+\s+catalog\s+true\s`).MatchString(out) {
		t.Fatalf("principal list: %q %v", out, err)
	}
}
