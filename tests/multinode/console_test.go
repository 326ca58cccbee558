package multinode

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/console"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// sqliteNodes starts n Floe nodes sharing one SQLite metadata file (and
// one warehouse directory and public URL).
func sqliteNodes(t *testing.T, n int) []*testkit.Floe {
	shared := t.TempDir()
	var out []*testkit.Floe
	for range n {
		out = append(out, testkit.Start(t, func(c *app.Config) {
			c.Store = filepath.Join(shared, "floe.db")
			c.DataDir = shared
			c.PublicURL = "http://floe.multinode.test"
		}))
	}
	return out
}

// consoleCall makes one console request to node with the session cookie
// (and CSRF token, when not empty), from the node's own origin.
func consoleCall(t *testing.T, node *testkit.Floe, method, path, body, cookie, csrf string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, node.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", node.URL)
	req.Header.Set("Content-Type", "application/json")
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: cookie})
	}
	if csrf != "" {
		req.Header.Set(console.CSRFHeader, csrf)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if method == "POST" && path == "/console/api/login" && resp.StatusCode == 200 {
		for _, c := range resp.Cookies() {
			if c.Name == console.CookieName {
				return resp.StatusCode, append([]byte(c.Value+"\n"), out...)
			}
		}
		t.Fatalf("sign-in set no cookie")
	}
	return resp.StatusCode, out
}

// TestNodes_ConsoleSessionsShared: a console session made on node A works
// on node B (the store holds it, not A's memory), with the same CSRF
// token; sign-out on B ends it on A at once and revokes its token for
// both; the store holds no cookie value and no usable token. On SQLite
// (one file) and PostgreSQL.
func TestNodes_ConsoleSessionsShared(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(*testing.T, int) []*testkit.Floe
	}{{"sqlite", sqliteNodes}, {"postgres", nodes}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.start(t, 2)
			a, b := ns[0], ns[1]
			st, out := consoleCall(t, a, "POST", "/console/api/login", `{"client_id":"`+a.Cred.ClientID+`","client_secret":"`+a.Cred.Secret+`"}`, "", "")
			if st != 200 {
				t.Fatalf("sign-in on A: %d %s", st, out)
			}
			cookie, body, _ := strings.Cut(string(out), "\n")
			var info struct {
				CSRF string `json:"csrf_token"`
			}
			if err := json.Unmarshal([]byte(body), &info); err != nil || info.CSRF == "" {
				t.Fatalf("sign-in answer %s: %v", body, err)
			}
			// B serves the session made on A.
			if st, out := consoleCall(t, b, "GET", "/console/api/session", "", cookie, ""); st != 200 || !strings.Contains(string(out), `"csrf_token":"`+info.CSRF+`"`) {
				t.Fatalf("A's session on B: %d %s", st, out)
			}
			if st, out := consoleCall(t, b, "GET", "/console/api/proxy/api/v1/whoami", "", cookie, ""); st != 200 || !strings.Contains(string(out), `"principal":"admin"`) {
				t.Fatalf("whoami through B with A's session: %d %s", st, out)
			}
			// A state-changing call on B with the CSRF token A gave.
			if st, out := consoleCall(t, b, "POST", "/console/api/proxy/api/v1/roles", `{"name":"made-on-b"}`, cookie, info.CSRF); st != 201 {
				t.Fatalf("POST through B with A's CSRF token: %d %s", st, out)
			}
			// The store (read through B) holds the session under the hash
			// of the cookie value, and the token sealed under a key only
			// the cookie value gives.
			row, err := b.App.Store().ConsoleSession(t.Context(), console.SessionKey(cookie))
			if err != nil {
				t.Fatalf("the session's row: %v", err)
			}
			dump := fmt.Sprintf("%+v", row)
			tok := unsealToken(t, cookie, row.SealedToken)
			if strings.Contains(dump, cookie) || strings.Contains(dump, tok) || strings.Contains(dump, info.CSRF) || row.Principal != "admin" {
				t.Fatalf("the store holds the cookie value, the token or the CSRF token in the clear: %s", dump)
			}
			// Sign-out on B ends the session on A at once, and the token
			// is refused everywhere.
			if st, out := consoleCall(t, b, "POST", "/console/api/logout", "", cookie, info.CSRF); st != 204 {
				t.Fatalf("sign-out on B: %d %s", st, out)
			}
			if st, out := consoleCall(t, a, "GET", "/console/api/session", "", cookie, ""); st != 401 {
				t.Fatalf("A after sign-out on B: %d %s, want 401", st, out)
			}
			if st, out := consoleCall(t, a, "GET", "/console/api/proxy/api/v1/whoami", "", cookie, ""); st != 401 {
				t.Fatalf("A's proxy after sign-out on B: %d %s, want 401", st, out)
			}
			if r := a.DoAs(t, tok, "GET", "/v1/config", nil); r.Status != 401 {
				t.Fatalf("the session's token on A after sign-out on B: %d, want 401", r.Status)
			}
			if _, err := a.App.Store().ConsoleSession(t.Context(), console.SessionKey(cookie)); floe.KindOf(err) != floe.NotFound {
				t.Fatalf("the session's row after sign-out: %v, want NotFound", err)
			}
		})
	}
}

// unsealToken opens a stored session's sealed token with the key derived
// from its cookie value (HMAC-SHA256(cookie, "floe console token seal"),
// AES-256-GCM, nonce first, the row's key as additional data), as
// docs/console.md describes.
func unsealToken(t *testing.T, cookie, sealed string) string {
	t.Helper()
	m := hmac.New(sha256.New, []byte(cookie))
	m.Write([]byte("floe console token seal"))
	blk, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		t.Fatal(err)
	}
	g, err := cipher.NewGCM(blk)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < g.NonceSize() {
		t.Fatalf("sealed token %q: %v", sealed, err)
	}
	out, err := g.Open(nil, raw[:g.NonceSize()], raw[g.NonceSize():], []byte(console.SessionKey(cookie)))
	if err != nil {
		t.Fatalf("open the sealed token: %v", err)
	}
	return string(out)
}
