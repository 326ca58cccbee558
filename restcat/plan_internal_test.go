package restcat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
)

func TestBoundedLRU(t *testing.T) {
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	for _, c := range []struct {
		name     string
		items    int
		bytes    int64
		adds     []int64 // sizes of keys 0, 1, ...
		wantKeys []int
	}{
		{"count bound", 2, 100, []int64{1, 1, 1}, []int{1, 2}},
		{"byte bound", 10, 10, []int64{4, 4, 4}, []int{1, 2}},
		{"too large for the cache", 10, 10, []int64{4, 11}, []int{0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newBoundedLRU[int, string](c.items, c.bytes, time.Minute, clock)
			for k, sz := range c.adds {
				l.Add(k, "v", sz)
			}
			var got []int
			for k := range c.adds {
				if _, ok := l.Get(k); ok {
					got = append(got, k)
				}
			}
			if len(got) != len(c.wantKeys) {
				t.Fatalf("kept %v, want %v", got, c.wantKeys)
			}
			for i := range got {
				if got[i] != c.wantKeys[i] {
					t.Fatalf("kept %v, want %v", got, c.wantKeys)
				}
			}
			if n, b := l.Len(); n > c.items || b > c.bytes {
				t.Errorf("%d entries of %d bytes exceed the bounds", n, b)
			}
		})
	}
	// Least recently used goes first; entries expire after the TTL.
	l := newBoundedLRU[int, string](2, 100, time.Minute, clock)
	l.Add(1, "a", 1)
	l.Add(2, "b", 1)
	l.Get(1)
	l.Add(3, "c", 1)
	if _, ok := l.Get(2); ok {
		t.Error("2 was the least recently used: evicted")
	}
	if l.evictions != 1 {
		t.Errorf("%d evictions", l.evictions)
	}
	now = now.Add(time.Minute)
	if _, ok := l.Get(1); ok {
		t.Error("expired entry returned")
	}
	if l.Remove(3) {
		t.Error("an expired entry removed as live")
	}
}

func TestPlanTaskToken(t *testing.T) {
	id, page, ok := parsePlanTaskToken(planTaskToken("abc", 7))
	if !ok || id != "abc" || page != 7 {
		t.Errorf("round trip: %q %d %v", id, page, ok)
	}
	for _, bad := range []string{"", "!!", "cHQxOmFiYw", "eDph"} {
		if _, _, ok := parsePlanTaskToken(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

var fuzzSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "Region", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "d", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 4, Name: "x", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 5, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 6, Name: "b", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 7, Name: "dec", Type: iceberg.DecimalTypeOf(9, 2)},
)

// FuzzParseFilter: any input either parses into an expression that binds
// to the schema and survives a JSON round trip, or is refused as Invalid;
// nothing panics.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`true`, `false`, `{"type":"literal","value":true}`,
		`{"type":"eq","term":"id","value":1}`,
		`{"type":"and","left":{"type":"lt","term":"id","value":5},"right":{"type":"not","child":{"type":"is-null","term":"Region"}}}`,
		`{"type":"or","left":{"type":"starts-with","term":"Region","value":"e"},"right":{"type":"not-nan","term":"x"}}`,
		`{"type":"in","term":"d","values":["2024-01-01","2024-02-01"]}`,
		`{"type":"not-in","term":"dec","values":["1.25"]}`,
		`{"type":"gt-eq","term":"ts","value":"2024-01-01T00:00:00+00:00"}`,
		`{"type":"eq","term":"b","value":"0a0b"}`,
		`{"type":"eq","term":{"type":"transform","transform":"bucket[4]","term":"id"},"value":1}`,
		`{"type":"eq","term":{"type":"reference","term":"region"},"value":"eu"}`,
		`{"type":"not-eq","term":"REGION","value":"eu"}`,
		`{"type":"is-nan","term":"x","value":1}`,
		`[]`, `{"type":"not"}`, `"x"`, `{"type":"eq","term":"id","value":1e400}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, caseSensitive bool) {
		e, canon, err := parseFilter(json.RawMessage(data), fuzzSchema, caseSensitive)
		if err != nil {
			if floe.KindOf(err) != floe.Invalid {
				t.Fatalf("error of kind %v: %v", floe.KindOf(err), err)
			}
			return
		}
		if _, err := iceberg.BindExpr(fuzzSchema, e, true); err != nil {
			t.Fatalf("accepted %s but it does not bind: %v", data, err)
		}
		if strings.HasPrefix(canon, "raw:") {
			return // not writable as JSON (iceberg-go cannot write every literal): keyed by its bytes
		}
		again, canon2, err := parseFilter(json.RawMessage(canon), fuzzSchema, true)
		if err != nil {
			t.Fatalf("%s parsed, but its canonical form %s does not: %v", data, canon, err)
		}
		if canon2 != canon || again == nil {
			t.Fatalf("canonical form not stable: %s then %s", canon, canon2)
		}
	})
}

func TestParseFilterCanonical(t *testing.T) {
	for _, c := range []struct {
		name, in      string
		caseSensitive bool
		want          string // a part of the canonical form
	}{
		// A timestamp literal cannot be written before binding; the bound
		// form can, so the cache key is the expression, not its bytes.
		{"timestamp", `{"type":"gt-eq","term":"ts","value":"2024-01-01T00:00:00+00:00"}`, true, `"term":"ts"`},
		{"case-insensitive name", `{"type":"eq","term":"REGION","value":"eu"}`, false, `"term":"Region"`},
		{"date", `{"type":"in","term":"d","values":["2024-01-01"]}`, true, `"2024-01-01"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, canon, err := parseFilter(json.RawMessage(c.in), fuzzSchema, c.caseSensitive)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(canon, "raw:") || !strings.Contains(canon, c.want) {
				t.Errorf("canonical %s, want it to contain %s", canon, c.want)
			}
		})
	}
}
