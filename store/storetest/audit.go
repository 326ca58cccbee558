package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
)

// testAuditQuery checks every filter of AuditQuery, alone and combined,
// ordering, limits and seq paging; prefixes are literal (no LIKE
// wildcards), case-sensitive and work on non-ASCII text.
func testAuditQuery(t *testing.T, e *env) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	type ev struct{ principal, action, resource, outcome, request string }
	events := []ev{
		{"ann", "oauth.token", "principal:ann", "success", "r1"},                          // 1
		{"ann", "storage.credentials.vend", "table:floe/crm.accounts", "success", "r2"},   // 2
		{"ann", "s3.GetObject", "s3://floe/crm/accounts/data/a.parquet", "success", "r2"}, // 3
		{"bob", "oauth.token", "principal:bob", "failure", "r3"},                          // 4
		{"bob", "Oauth.Custom", "table:floe/crm.accounts2", "success", "r4"},              // 5
		{"", "s3.PutObject", "s3://floe/a_b/x", "failure", "r5"},                          // 6
		{"bob", "s3.PutObject", "s3://floe/axb/x", "success", "r6"},                       // 7
		{"ann", "oauth.revoke", "table:floe/sales.orders", "success", "r7"},               // 8
		{"ann", "storage.credentials.vend", "table:floe/é.t", "denied", "r8"},             // 9
		{"bob", "oauth.tokens", "table:floe/crm%", "success", "r9"},                       // 10
	}
	err := e.s.AppendAuditBatch(e.ctx, func(prevSeq int64, prevHash string) ([]audit.Record, error) {
		var rs []audit.Record
		for i, x := range events {
			seq := prevSeq + int64(i) + 1
			rs = append(rs, audit.Record{Seq: seq, Time: t0.Add(time.Duration(i) * time.Minute), RequestID: x.request,
				Principal: x.principal, ClientAddr: "10.0.0.1", Action: x.action, Resource: x.resource, Outcome: x.outcome,
				Detail: []byte(`{}`), PrevHash: prevHash, Hash: fmt.Sprintf("h%d", seq)})
			prevHash = rs[i].Hash
		}
		return rs, nil
	})
	must(t, err)

	at := func(i int) time.Time { return t0.Add(time.Duration(i-1) * time.Minute) }
	tests := []struct {
		name string
		q    audit.Query
		want []int64
	}{
		{"all", audit.Query{}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"principal", audit.Query{Principal: "ann"}, []int64{1, 2, 3, 8, 9}},
		{"action exact", audit.Query{Action: "oauth.token"}, []int64{1, 4}},
		{"action prefix is case-sensitive", audit.Query{Action: "oauth.*"}, []int64{1, 4, 8, 10}},
		{"action prefix without dot", audit.Query{Action: "s3.Put*"}, []int64{6, 7}},
		{"action star alone", audit.Query{Action: "*"}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"resource prefix", audit.Query{Resource: "table:floe/crm."}, []int64{2, 5}},
		{"resource prefix, one namespace", audit.Query{Resource: "table:floe/s"}, []int64{8}},
		{"resource prefix, longer names too", audit.Query{Resource: "table:floe/crm.accounts"}, []int64{2, 5}},
		{"underscore is literal", audit.Query{Resource: "s3://floe/a_"}, []int64{6}},
		{"percent is literal", audit.Query{Resource: "table:floe/crm%"}, []int64{10}},
		{"non-ASCII prefix", audit.Query{Resource: "table:floe/é"}, []int64{9}},
		{"whole resource", audit.Query{Resource: "principal:bob"}, []int64{4}},
		{"no match", audit.Query{Resource: "table:floe/zzz"}, []int64{}},
		{"outcome", audit.Query{Outcome: "failure"}, []int64{4, 6}},
		{"request id", audit.Query{RequestID: "r2"}, []int64{2, 3}},
		{"since", audit.Query{Since: at(8)}, []int64{8, 9, 10}},
		{"until (exclusive)", audit.Query{Until: at(3)}, []int64{1, 2}},
		{"since and until", audit.Query{Since: at(4), Until: at(6)}, []int64{4, 5}},
		{"since in another zone", audit.Query{Since: at(9).In(time.FixedZone("X", -5*3600))}, []int64{9, 10}},
		{"seq window", audit.Query{After: 3, Before: 7}, []int64{4, 5, 6}},
		{"newest first", audit.Query{Newest: true, Limit: 3}, []int64{10, 9, 8}},
		{"oldest first with limit", audit.Query{Limit: 2}, []int64{1, 2}},
		{"newest page before a seq", audit.Query{Newest: true, Before: 8, Limit: 2}, []int64{7, 6}},
		{"combined", audit.Query{Principal: "ann", Action: "storage.*", Since: at(2), Outcome: "success"}, []int64{2}},
		{"combined newest", audit.Query{Principal: "bob", Resource: "table:", Newest: true}, []int64{10, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := e.s.AuditQuery(e.ctx, tt.q)
			must(t, err)
			got := []int64{}
			for _, r := range rs {
				got = append(got, r.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("AuditQuery(%+v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
	// Records come back whole.
	rs, err := e.s.AuditQuery(e.ctx, audit.Query{RequestID: "r8"})
	must(t, err)
	if len(rs) != 1 || rs[0].Resource != "table:floe/é.t" || rs[0].Outcome != "denied" || rs[0].Hash != "h9" || rs[0].PrevHash != "h8" ||
		!rs[0].Time.Equal(at(9)) || string(rs[0].Detail) != "{}" || rs[0].ClientAddr != "10.0.0.1" {
		t.Errorf("record 9 = %+v", rs)
	}
	// The default limit, over more records than it.
	err = e.s.AppendAuditBatch(e.ctx, func(prevSeq int64, prevHash string) ([]audit.Record, error) {
		var rs []audit.Record
		for i := range audit.DefaultQueryLimit {
			seq := prevSeq + int64(i) + 1
			rs = append(rs, audit.Record{Seq: seq, Time: t0.Add(time.Hour), Action: "bulk", Detail: []byte(`{}`),
				PrevHash: prevHash, Hash: fmt.Sprintf("h%d", seq)})
			prevHash = rs[i].Hash
		}
		return rs, nil
	})
	must(t, err)
	rs, err = e.s.AuditQuery(e.ctx, audit.Query{})
	must(t, err)
	if len(rs) != audit.DefaultQueryLimit || rs[0].Seq != 1 {
		t.Errorf("default limit: %d records from %d", len(rs), rs[0].Seq)
	}
	// Invalid queries.
	for _, q := range []audit.Query{
		{Limit: -1},
		{Limit: audit.MaxQueryLimit + 1},
		{Action: "oauth*.token"},
		{Since: at(3), Until: at(3)},
		{After: -1},
	} {
		if _, err := e.s.AuditQuery(e.ctx, q); floe.KindOf(err) != floe.Invalid {
			t.Errorf("AuditQuery(%+v): %v, want Invalid", q, err)
		}
	}
}
