package sharecat

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzPaths: whatever namespace, table and query a recipient sends, the
// answer is never a 5xx, never names a real table or namespace the request
// did not name, and a write is never anything but refused.
func FuzzPaths(f *testing.F) {
	for _, s := range [][3]string{{"emea", "orders", ""}, {"hr", "payroll", "snapshots=refs"}, {"emea%1Fx", "..", ""},
		{"crm", "hidden", "pageSize=0"}, {"emea", "orders%2F..%2F..", "pageToken=czE6"}, {"", "", ""}, {"\x00", "\xff", "%"}} {
		f.Add(s[0], s[1], s[2], uint8(0))
	}
	fx := newFixture(f)
	methods := []string{"GET", "HEAD", "POST", "DELETE"}
	f.Fuzz(func(t *testing.T, ns, tbl, query string, m uint8) {
		method := methods[int(m)%len(methods)]
		path := cat + "/sales/namespaces/" + url.PathEscape(ns)
		if tbl != "" {
			path += "/tables/" + url.PathEscape(tbl)
		}
		if query != "" {
			path += "?" + url.PathEscape(query)
		}
		if strings.ContainsAny(path, " \x7f") {
			return
		}
		req, err := http.NewRequest(method, path, nil)
		if err != nil {
			return
		}
		r := fx.do(t, "alice-token", method, req.URL.RequestURI(), "")
		if r.status >= 500 {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
		}
		if (method == "DELETE" || (method == "POST" && tbl != "" && !strings.HasSuffix(path, "/metrics"))) &&
			r.status != 403 && r.status != 404 && r.status != 307 && r.status != 301 {
			t.Fatalf("write %s %s answered %d %s", method, path, r.status, r.body)
		}
		if r.status == 200 {
			return // a shared table's answer names its storage location
		}
		noRealNames(t, r.body, ns+" "+tbl+" "+query)
	})
}

// FuzzPageToken: a page token never panics and never decodes to
// something that was not encoded.
func FuzzPageToken(f *testing.F) {
	for _, s := range []string{"", "czE6", encodePageToken("emea"), "!!", "czE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		last, err := decodePageToken(tok)
		if err != nil {
			return
		}
		if got, err := decodePageToken(encodePageToken(last)); err != nil || got != last {
			t.Fatalf("round trip of %q: %q, %v", last, got, err)
		}
	})
}
