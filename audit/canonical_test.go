package audit

import (
	"bytes"
	"testing"
	"time"
)

// TestCanonicalLine checks that the direct encoding of the hashed fields is
// byte for byte what encoding/json writes, for plain fields and for fields
// that JSON escapes (which take the encoder itself).
func TestCanonicalLine(t *testing.T) {
	at := time.Date(2026, 12, 3, 7, 8, 9, 123456000, time.UTC)
	for _, tt := range []struct {
		name string
		r    Record
	}{
		{"plain", Record{Seq: 42, Time: at, RequestID: "0123456789abcdef", Principal: "reader", ClientAddr: "127.0.0.1:5000",
			Action: "catalog.loadTable", Resource: "table:wh/load.t1", Outcome: OutcomeSuccess}},
		{"empty", Record{}},
		{"negative seq", Record{Seq: -1, Time: at}},
		{"html", Record{Seq: 1, Time: at, Resource: "table:w/a<b>&c"}},
		{"quote and backslash", Record{Seq: 1, Time: at, Principal: `a"b\c`}},
		{"control", Record{Seq: 1, Time: at, RequestID: "a\nb\tc\x00\x7f\b\f"}},
		{"unicode", Record{Seq: 1, Time: at, Principal: "zoë\u2028\u2029"}},
		{"invalid utf-8", Record{Seq: 1, Time: at, Resource: "a\xffb"}},
		{"other zone", Record{Seq: 7, Time: at.In(time.FixedZone("X", 3600))}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkCanonical(t, tt.r)
		})
	}
}

func checkCanonical(t *testing.T, r Record) {
	t.Helper()
	got, err := canonicalLine(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := encodeCanonical(r, r.Time.UTC().Format(timeLayout))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("canonicalLine = %q\nencoding/json = %q", got, want)
	}
}

// FuzzCanonicalLine: for any field values the direct encoding matches
// encoding/json's, so hashes (and old chains) stay the same.
func FuzzCanonicalLine(f *testing.F) {
	f.Add(int64(1), "0123456789abcdef", "reader", "127.0.0.1:1", "catalog.loadTable", "table:w/a.t", "success")
	f.Add(int64(-5), "a\"b", "\\", "\x00", "\u2028", "\xff", "<&>")
	f.Fuzz(func(t *testing.T, seq int64, rid, principal, addr, action, resource, outcome string) {
		checkCanonical(t, Record{Seq: seq, Time: time.Unix(1_800_000_000, 123000).UTC(), RequestID: rid, Principal: principal,
			ClientAddr: addr, Action: action, Resource: resource, Outcome: outcome})
	})
}
