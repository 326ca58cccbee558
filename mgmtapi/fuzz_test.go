package mgmtapi

import (
	"encoding/json"
	"net/url"
	"slices"
	"testing"

	"github.com/floe-lake/floe"
)

// FuzzGrantRequest: any request body either decodes into a grant whose
// securable and grantee are valid, or is refused as Invalid; nothing
// panics, and an accepted grant's JSON form names the same securable.
func FuzzGrantRequest(f *testing.F) {
	for _, s := range []string{
		`{"grantee":{"kind":"role","name":"analysts"},"privilege":"SELECT","on":{"kind":"table","namespace":["crm"],"name":"accounts"}}`,
		`{"grantee":{"kind":"principal","name":"bi"},"privilege":"describe","tag_expression":"domain = sales AND sensitivity IN (low, medium)"}`,
		`{"grantee":{"kind":"role","name":"r"},"privilege":"SELECT","on":{"kind":"namespace","warehouse":"w","namespace":["a","b"]},"all_tables":true,"filter":{"row_filter":"x > 1","include_columns":["a"]}}`,
		`{"grantee":{"kind":"role","name":"r"},"privilege":"SELECT","on":{"kind":"view","namespace":[],"name":""}}`,
		`{"grantee":null}`, `[]`, `{"on":{"kind":"warehouse","x":1}}`, "", "{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req GrantRequest
		if err := decodeBytes(body, &req); err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("decode error of kind %v: %v", floe.KindOf(err), err)
			}
			return
		}
		g, err := req.grant("floe")
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("grant error of kind %v: %v", floe.KindOf(err), err)
			}
			return
		}
		if err := g.On.Validate(); err != nil {
			t.Fatalf("accepted an invalid securable %+v: %v", g.On, err)
		}
		if err := g.Grantee.Validate(); err != nil {
			t.Fatalf("accepted an invalid grantee %+v: %v", g.Grantee, err)
		}
		js := securableJSON(g.On)
		b, err := json.Marshal(js)
		if err != nil {
			t.Fatal(err)
		}
		var back Securable
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		s2, err := back.securable("floe")
		if err != nil || s2.Kind != g.On.Kind || s2.Warehouse != g.On.Warehouse || s2.Name != g.On.Name ||
			!slices.Equal(s2.Namespace, g.On.Namespace) {
			t.Fatalf("securable %+v does not round-trip: %+v, %v", g.On, s2, err)
		}
	})
}

// FuzzSecurableQuery: any query string either names a valid securable or
// is refused as Invalid.
func FuzzSecurableQuery(f *testing.F) {
	for _, s := range []string{"", "namespace=crm", "namespace=crm&table=accounts", "namespace=a.b&view=v", "table=t",
		"namespace=a%1Fb.c&table=t", "warehouse=w&namespace=..", "table=a&view=b", "namespace=%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		s, err := securableQuery(q, "floe")
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("error of kind %v: %v", floe.KindOf(err), err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted an invalid securable %+v: %v", s, err)
		}
	})
}

// FuzzTombstonePage: any listing query either gives a page size within
// bounds or is refused as Invalid.
func FuzzTombstonePage(f *testing.F) {
	for _, s := range []string{"", "page_size=1", "page_size=1000", "page_size=1001", "page_size=0", "page_size=-1",
		"page_size=9999999999999999999999", "page_size=+5", "page_size=%00", "page_token=s3%3A%2F%2Ffloe%2Fhr&page_size=10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		size, after, err := tombstonePage(q)
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("error of kind %v: %v", floe.KindOf(err), err)
			}
			return
		}
		if size < 1 || size > MaxTombstonePage || after != q.Get("page_token") {
			t.Fatalf("query %q: size %d, after %q", raw, size, after)
		}
	})
}
