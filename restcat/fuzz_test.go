package restcat

import (
	"encoding/json"
	"testing"

	"github.com/floe-lake/floe"
)

// FuzzDecodeCommit feeds arbitrary bytes to the commit decoder: it must
// return a value or an Invalid error, never panic or return another kind.
func FuzzDecodeCommit(f *testing.F) {
	for _, s := range []string{
		`{"requirements":[],"updates":[]}`,
		`{"requirements":[{"type":"assert-create"}],"updates":[{"action":"assign-uuid","uuid":"6f9619ff-8b86-d011-b42d-00c04fc964ff"}]}`,
		`{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":1,"timestamp-ms":1,"manifest-list":"x","summary":{"operation":"append"}}}]}`,
		`{"requirements":[],"updates":[{"action":"add-schema","schema":{"type":"struct","fields":[{"id":1,"name":"a","type":"decimal(9,2)","required":true}]}}]}`,
		`{"requirements":[],"updates":[{"action":"add-spec","spec":{"fields":[{"source-id":1,"field-id":1000,"name":"b","transform":"bucket[16]"}]}}]}`,
		`{"updates":[{"action":"set-properties","updates":{"a":1}}]}`,
		`{"requirements":[{"type":"nope"}],"updates":[]}`,
		`[]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := parseCommit(b)
		if err != nil && floe.KindOf(err) != floe.Invalid {
			t.Fatalf("kind %v for %q: %v", floe.KindOf(err), b, err)
		}
	})
}

// FuzzDecodeCreateTable covers the create-table body (schema, spec, sort order).
func FuzzDecodeCreateTable(f *testing.F) {
	for _, s := range []string{
		`{"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"a","type":"long","required":true}]}}`,
		`{"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"m","type":{"type":"map","key-id":2,"key":"string","value-id":3,"value":"int","value-required":false},"required":false}]},"partition-spec":{"fields":[]},"write-order":{"order-id":1,"fields":[{"source-id":1,"transform":"identity","direction":"asc","null-order":"nulls-first"}]}}`,
		`{"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"l","type":{"type":"list","element-id":2,"element":"string","element-required":true},"required":false}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req createTableRequest
		if err := decodeBytes(b, &req); err != nil && floe.KindOf(err) != floe.Invalid {
			t.Fatalf("kind %v: %v", floe.KindOf(err), err)
		}
		var tx commitTransactionRequest
		if err := decodeBytes(b, &tx); err != nil && floe.KindOf(err) != floe.Invalid {
			t.Fatalf("kind %v: %v", floe.KindOf(err), err)
		}
	})
}

// FuzzPageToken checks that any token either round-trips or is rejected as Invalid.
func FuzzPageToken(f *testing.F) {
	f.Add("a\x1fb")
	f.Add("")
	f.Add(encodePageToken("t42"))
	f.Fuzz(func(t *testing.T, s string) {
		got, err := decodePageToken(encodePageToken(s))
		if err != nil || got != s {
			t.Fatalf("round trip of %q: %q, %v", s, got, err)
		}
		if _, err := decodePageToken(s); err != nil && floe.KindOf(err) != floe.Invalid {
			t.Fatalf("kind %v", floe.KindOf(err))
		}
	})
}

// FuzzRequireFields must never panic and must only report Invalid.
func FuzzRequireFields(f *testing.F) {
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte(`{"a":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := requireFields(b, "a")
		if err != nil && floe.KindOf(err) != floe.Invalid {
			t.Fatalf("kind %v", floe.KindOf(err))
		}
		if err == nil {
			var m map[string]json.RawMessage
			if json.Unmarshal(b, &m) != nil || m["a"] == nil {
				t.Fatalf("accepted %q without field a", b)
			}
		}
	})
}
