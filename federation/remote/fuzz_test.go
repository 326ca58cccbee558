package remote

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	floe "github.com/floe-lake/floe"
)

// FuzzRemoteMessage: whatever a remote sends, the message kept is valid
// UTF-8, free of control characters and at most maxMessage characters
// (plus the ellipsis).
func FuzzRemoteMessage(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"Table does not exist","type":"NoSuchTableException","code":404}}`))
	f.Add([]byte(`{"error":"invalid_client","error_description":"bad\nclient"}`))
	f.Add([]byte("<html>\xff</html>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		m := remoteMessage(body)
		if !utf8.ValidString(m) || utf8.RuneCountInString(m) > maxMessage+1 {
			t.Fatalf("message %q", m)
		}
		for _, r := range m {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character in %q", m)
			}
		}
	})
}

// FuzzWriteError: whatever a remote answers a forwarded write, Floe's error
// is a non-internal domain error whose message names the catalog, keeps
// at most the remote's cleaned message (never the rest of the body), and
// whose entity is one Floe knows; the ErrorModel type kept is a plain name.
func FuzzWriteError(f *testing.F) {
	f.Add(409, []byte(`{"error":{"message":"Requirement failed","type":"CommitFailedException","code":409}}`), true)
	f.Add(404, []byte(`{"error":{"message":"no","type":"NoSuchNamespaceException","code":404}}`), false)
	f.Add(500, []byte("<html>secret-body</html>"), true)
	f.Add(403, []byte(`{"error":{"message":"x","type":"A\nB"}}`), false)
	c, err := New(Options{Name: "ext", URI: "http://127.0.0.1:1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, commit bool) {
		if status < 100 || status > 599 || status/100 == 2 {
			return
		}
		o := op{name: "commitTable", method: "POST", path: "/v1/p/namespaces/a/tables/t", entity: "table", object: "table a.t", write: true, commit: commit}
		err := c.writeError(o, &response{status: status, header: http.Header{}, body: body})
		k := floe.KindOf(err)
		msg := floe.PublicMessage(err)
		if k == floe.Internal || !strings.Contains(msg, "ext") || utf8.RuneCountInString(msg) > maxMessage+200 {
			t.Fatalf("status %d: kind %v, message %q", status, k, msg)
		}
		if e := floe.EntityOf(err); e != "" && e != "table" && e != "namespace" && e != "view" && e != "privilege" {
			t.Fatalf("entity %q", e)
		}
		if typ := remoteErrorType(body); typ != "" && !errorTypeRE.MatchString(typ) {
			t.Fatalf("type %q", typ)
		}
	})
}
