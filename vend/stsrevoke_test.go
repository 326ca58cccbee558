package vend_test

import (
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/vend"
)

// TestSTSSessionTags: every AssumeRole session is tagged with the
// principal, token id and table, sanitised to what STS accepts.
func TestSTSSessionTags(t *testing.T) {
	f := newFakeSTS(t, okAnswer)
	m := newSTS(t, f, nil)
	s := session()
	s.Principal = "ann smith/ops#1"
	mint(t, m, s, 0)
	form := f.requests()[0]
	want := map[string]string{
		"Tags.member.1.Key": "floe-principal", "Tags.member.1.Value": "ann smith/ops_1",
		"Tags.member.2.Key": "floe-token-id", "Tags.member.2.Value": "jti-1",
		"Tags.member.3.Key": "floe-table", "Tags.member.3.Value": "crm.accounts",
	}
	for k, v := range want {
		if got := form.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// TestSTSUntaggedFallback: a role whose trust policy lacks sts:TagSession
// still vends, untagged, and Floe stops asking for tags.
func TestSTSUntaggedFallback(t *testing.T) {
	var calls atomic.Int32
	f := newFakeSTS(t, func(form url.Values) (int, string) {
		calls.Add(1)
		if form.Get("Tags.member.1.Key") != "" {
			return http.StatusForbidden, stsError("AccessDenied", "User is not authorized to perform: sts:TagSession on resource")
		}
		return okAnswer(form)
	})
	m := newSTS(t, f, nil)
	mint(t, m, session(), 0)
	mint(t, m, session(), 0)
	reqs := f.requests()
	if len(reqs) != 3 || reqs[0].Get("Tags.member.1.Key") == "" || reqs[1].Get("Tags.member.1.Key") != "" || reqs[2].Get("Tags.member.1.Key") != "" {
		t.Fatalf("%d requests; want a tagged one refused, then untagged ones", len(reqs))
	}
	// Other refusals are not retried.
	g := newFakeSTS(t, func(url.Values) (int, string) {
		return http.StatusForbidden, stsError("AccessDenied", "User is not authorized to perform: sts:AssumeRole")
	})
	if _, _, err := newSTS(t, g, nil).Mint(t.Context(), session(), 0); err == nil || len(g.requests()) != 1 {
		t.Fatalf("Mint = %v after %d requests; want one refused request", err, len(g.requests()))
	}
}

// TestRevokeSessionsPolicy: the deny statements, byte for byte.
func TestRevokeSessionsPolicy(t *testing.T) {
	at := time.Date(2026, 12, 3, 15, 4, 5, 600, time.UTC)
	tests := []struct {
		name string
		r    vend.RevokeSessions
		want string
	}{
		{"all older sessions", vend.RevokeSessions{Before: at},
			`{"Statement":[{"Sid":"FloeRevokeOlderSessions","Effect":"Deny","Action":"*","Resource":"*","Condition":{"DateLessThan":{"aws:TokenIssueTime":["2026-12-03T15:04:05Z"]}}}],"Version":"2012-10-17"}`},
		{"principals and tokens", vend.RevokeSessions{
			Principals: map[string]time.Time{"zed": at, "ann smith": at.Add(time.Hour)},
			TokenIDs:   []string{"jti-2", "jti-1", "jti-2"}},
			`{"Statement":[` +
				`{"Sid":"FloeRevokePrincipal0","Effect":"Deny","Action":"*","Resource":"*","Condition":{"DateLessThan":{"aws:TokenIssueTime":["2026-12-03T16:04:05Z"]},"StringEquals":{"aws:PrincipalTag/floe-principal":["ann smith"]}}},` +
				`{"Sid":"FloeRevokePrincipal1","Effect":"Deny","Action":"*","Resource":"*","Condition":{"DateLessThan":{"aws:TokenIssueTime":["2026-12-03T15:04:05Z"]},"StringEquals":{"aws:PrincipalTag/floe-principal":["zed"]}}},` +
				`{"Sid":"FloeRevokeTokens","Effect":"Deny","Action":"*","Resource":"*","Condition":{"StringEquals":{"aws:PrincipalTag/floe-token-id":["jti-1","jti-2"]}}}` +
				`],"Version":"2012-10-17"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := vend.RevokeSessionsPolicy(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("policy\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	if _, err := vend.RevokeSessionsPolicy(vend.RevokeSessions{}); floe.KindOf(err) != floe.Invalid {
		t.Errorf("empty: %v, want Invalid", err)
	}
	many := vend.RevokeSessions{Principals: map[string]time.Time{}}
	for i := range 200 {
		many.Principals[string(rune('a'+i%26))+time.Duration(i).String()] = at
	}
	if _, err := vend.RevokeSessionsPolicy(many); floe.KindOf(err) != floe.Invalid {
		t.Errorf("oversized: %v, want Invalid", err)
	}
}
