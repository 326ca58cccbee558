package rowproof_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake/rowproof"
)

// The table: id long (1), region string (2), day date (3), flag boolean
// (4), price double (5); partitioned by identity(region) in spec 0 and
// unpartitioned in spec 1.
var (
	schema = iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 4, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 5, Name: "price", Type: iceberg.PrimitiveTypes.Float64})
	byRegion = iceberg.NewPartitionSpecID(0, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	unparted = iceberg.NewPartitionSpecID(1)
	byBucket = iceberg.NewPartitionSpecID(2, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "rb", Transform: iceberg.BucketTransform{NumBuckets: 4}})
	byMonth  = iceberg.NewPartitionSpecID(3, iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "m", Transform: iceberg.MonthTransform{}})
	byYear   = iceberg.NewPartitionSpecID(4, iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1002, Name: "y", Transform: iceberg.YearTransform{}})
	byDay    = iceberg.NewPartitionSpecID(5, iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1003, Name: "d", Transform: iceberg.DayTransform{}})
	byTrunc  = iceberg.NewPartitionSpecID(6, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1004, Name: "t", Transform: iceberg.TruncateTransform{Width: 10}})
)

func resolve(ref string) (rowproof.Column, bool) {
	f, ok := schema.FindFieldByNameCaseInsensitive(ref)
	if !ok {
		return rowproof.Column{}, false
	}
	return rowproof.Column{ID: f.ID, Type: f.Type}, true
}

type file struct {
	spec    *iceberg.PartitionSpec
	part    map[int]any
	rows    int64
	lo, hi  map[int][]byte
	nullCnt map[int]int64
}

func (f file) build(t *testing.T) iceberg.DataFile {
	t.Helper()
	rows := f.rows
	if rows == 0 {
		rows = 10
	}
	b, err := iceberg.NewDataFileBuilder(*f.spec, iceberg.EntryContentData, "s3://b/t/data/f.parquet", iceberg.ParquetFile, f.part, nil, nil, rows, 100)
	if err != nil {
		t.Fatal(err)
	}
	if f.lo != nil {
		b.LowerBoundValues(f.lo).UpperBoundValues(f.hi)
	}
	if f.nullCnt != nil {
		b.NullValueCounts(f.nullCnt)
	}
	return b.Build()
}

func long(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
func date(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

var (
	eu      = file{spec: &byRegion, part: map[int]any{1000: "EU"}}
	us      = file{spec: &byRegion, part: map[int]any{1000: "US"}}
	nullReg = file{spec: &byRegion, part: map[int]any{1000: nil}}
	// Unpartitioned files, by statistics.
	statsEU     = file{spec: &unparted, lo: map[int][]byte{2: []byte("EU"), 1: long(5)}, hi: map[int][]byte{2: []byte("EU"), 1: long(9)}, nullCnt: map[int]int64{2: 0, 1: 0}}
	statsEUNull = file{spec: &unparted, lo: map[int][]byte{2: []byte("EU")}, hi: map[int][]byte{2: []byte("EU")}, nullCnt: map[int]int64{2: 1}}
	statsEUUS   = file{spec: &unparted, lo: map[int][]byte{2: []byte("EU")}, hi: map[int][]byte{2: []byte("US")}, nullCnt: map[int]int64{2: 0}}
	statsNoNull = file{spec: &unparted, lo: map[int][]byte{2: []byte("EU")}, hi: map[int][]byte{2: []byte("EU")}} // null count unknown
	statsAllNul = file{spec: &unparted, nullCnt: map[int]int64{2: 10}}
	noStats     = file{spec: &unparted}
	bucketed    = file{spec: &byBucket, part: map[int]any{1000: int32(1)}}
	days        = file{spec: &unparted, lo: map[int][]byte{3: date(19723)}, hi: map[int][]byte{3: date(19730)}, nullCnt: map[int]int64{3: 0}} // 2024-01-01..08
	emptyFile   = file{spec: &unparted, rows: -1}
	jan2024     = file{spec: &byMonth, part: map[int]any{1001: int32(648)}} // (2024-1970)*12: 2024-01-01..31
	year2024    = file{spec: &byYear, part: map[int]any{1002: int32(54)}}
	day0108     = file{spec: &byDay, part: map[int]any{1003: iceberg.Date(19730)}}
	nullMonth   = file{spec: &byMonth, part: map[int]any{1001: nil}}
	ids10to19   = file{spec: &byTrunc, part: map[int]any{1004: int64(10)}}
	// A month partition and tighter bounds: both hold.
	jan0105 = file{spec: &byMonth, part: map[int]any{1001: int32(648)}, lo: map[int][]byte{3: date(19727)}, hi: map[int][]byte{3: date(19727)}, nullCnt: map[int]int64{3: 0}}
)

// TestDecide: every verdict is the one the file's rows force; where the
// metadata leaves room for a row that fails, the verdict is Unknown.
func TestDecide(t *testing.T) {
	cases := []struct {
		filter string
		f      file
		want   rowproof.Verdict
	}{
		{"region = 'EU'", eu, rowproof.All},
		{"region = 'EU'", us, rowproof.None},
		{"region = 'EU'", nullReg, rowproof.None},            // null = 'EU' is not true
		{"region <> 'EU'", nullReg, rowproof.None},           // nor is null <> 'EU'
		{"region IS NULL", nullReg, rowproof.All},            // identity partition null: every row null
		{"region IS NOT NULL", eu, rowproof.All},             //
		{"NOT region = 'EU'", eu, rowproof.None},             //
		{"REGION = 'EU'", eu, rowproof.All},                  // identifiers ignore case
		{`"region" = 'EU'`, eu, rowproof.All},                // quoted identifier
		{"region = 'eu'", eu, rowproof.None},                 // values do not
		{"region IN ('EU', 'APAC')", eu, rowproof.All},       //
		{"region IN ('APAC', 'US')", eu, rowproof.None},      //
		{"region NOT IN ('US')", eu, rowproof.All},           //
		{"region = 'EU' OR region = 'US'", us, rowproof.All}, //
		{"region = 'EU' AND id > 3", eu, rowproof.Unknown},   // id has no statistics here
		{"region = 'EU' AND id > 3", statsEU, rowproof.All},  // id in [5, 9]
		{"region = 'EU' AND id > 5", statsEU, rowproof.Unknown},
		{"region = 'EU' AND id > 9", statsEU, rowproof.None},
		{"id BETWEEN 5 AND 9", statsEU, rowproof.All},
		{"id NOT BETWEEN 5 AND 9", statsEU, rowproof.None},
		{"id BETWEEN 6 AND 9", statsEU, rowproof.Unknown},
		{"id >= -3", statsEU, rowproof.All},
		{"region = 'EU'", statsEU, rowproof.All},         // lower == upper, no nulls
		{"region = 'EU'", statsEUNull, rowproof.Unknown}, // a null row fails
		// Predicates are judged one by one: that the null rows are the
		// non-EU ones is not tracked, so this is refused (never wrongly
		// allowed).
		{"region = 'EU' OR region IS NULL", statsEUNull, rowproof.Unknown},
		{"region = 'EU'", statsNoNull, rowproof.Unknown}, // nulls unknown
		{"region = 'EU'", statsEUUS, rowproof.Unknown},   // some EU, some not
		{"region > 'AA'", statsEUUS, rowproof.All},       // EU..US all > AA
		{"region = 'APAC'", statsEUUS, rowproof.None},    // outside the bounds
		{"region = 'EU'", statsAllNul, rowproof.None},
		{"region = 'EU'", noStats, rowproof.Unknown},
		{"region = 'EU'", bucketed, rowproof.Unknown}, // not an identity partition
		{"day >= DATE '2024-01-01'", days, rowproof.All},
		{"day < '2024-01-08'", days, rowproof.Unknown},
		{"day > '2024-01-08'", days, rowproof.None},
		{"day BETWEEN '2024-01-01' AND '2024-01-31'", jan2024, rowproof.All},
		{"day >= '2024-01-15'", jan2024, rowproof.Unknown},
		{"day < DATE '2024-01-01'", jan2024, rowproof.None},
		{"day > '2023-12-31' AND day < '2024-02-01'", jan2024, rowproof.All},
		{"day >= '2024-01-01'", year2024, rowproof.All},
		{"day <= '2024-12-31'", year2024, rowproof.All},
		{"day < '2024-12-31'", year2024, rowproof.Unknown},
		{"day = '2024-01-08'", day0108, rowproof.All},
		{"day IS NULL", nullMonth, rowproof.All},
		{"day >= '2024-01-01'", nullMonth, rowproof.None},
		{"id BETWEEN 10 AND 19", ids10to19, rowproof.All},
		{"id < 15", ids10to19, rowproof.Unknown},
		{"id >= 20", ids10to19, rowproof.None},
		{"day = '2024-01-05'", jan0105, rowproof.All},
		{"TRUE", noStats, rowproof.All},
		{"FALSE OR region = 'EU'", eu, rowproof.All},
		{"region = 'EU'", emptyFile, rowproof.All}, // no rows: nothing fails
	}
	for _, c := range cases {
		f, err := rowproof.Compile([]string{c.filter}, resolve)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.filter, err)
			continue
		}
		var got rowproof.Verdict
		if c.f.rows == -1 {
			got = f.Decide(emptyDataFile(t), c.f.spec)
		} else {
			got = f.Decide(c.f.build(t), c.f.spec)
		}
		if got != c.want {
			t.Errorf("%q on %+v: %d, want %d", c.filter, c.f, got, c.want)
		}
	}
}

func emptyDataFile(t *testing.T) iceberg.DataFile {
	b, err := iceberg.NewDataFileBuilder(unparted, iceberg.EntryContentData, "s3://b/t/data/e.parquet", iceberg.ParquetFile, nil, nil, nil, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// TestOrOfFilters: several grants' filters admit a row if any does.
func TestOrOfFilters(t *testing.T) {
	f, err := rowproof.Compile([]string{"region = 'EU'", "region = 'US'"}, resolve)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Decide(us.build(t), &byRegion); got != rowproof.All {
		t.Fatalf("US file under EU-or-US grants: %d", got)
	}
	if got, want := f.String(), `or((#2="EU"),(#2="US"))`; got != want {
		t.Fatalf("String() = %s, want %s", got, want)
	}
}

// TestUnsupported: filters outside the subset do not compile (the plan is
// refused), whatever they would decide.
func TestUnsupported(t *testing.T) {
	for _, s := range []string{
		"region LIKE 'E%'", "lower(region) = 'eu'", "region = 'EU' OR", "t.region = 'EU'", "price > 1",
		"id = 1.5", "id = '1'", "region = 1", "nosuch = 'x'", "region = NULL", "region == 'EU'",
		"id + 1 > 2", "region = 'EU' ; DROP TABLE x", "(region = 'EU'", "region IN ()", "day = '2024-1-1'",
		"region = 'EU' COLLATE nocase", "CASE WHEN region = 'EU' THEN TRUE END", "region", "id = 99999999999999999999",
		"EXISTS (SELECT 1)", "region = 'unterminated", strings.Repeat("(", 100) + "TRUE" + strings.Repeat(")", 100),
	} {
		if _, err := rowproof.Compile([]string{s}, resolve); floe.KindOf(err) != floe.Unsupported {
			t.Errorf("Compile(%q) = %v, want Unsupported", s, err)
		}
	}
	if _, err := rowproof.Compile(nil, resolve); err == nil {
		t.Error("no filter compiled")
	}
}

// FuzzCompile: any text compiles or fails cleanly, and a compiled filter
// decides any file without panicking; its canonical form is stable.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{"region = 'EU'", "id BETWEEN 1 AND 2 OR NOT region IN ('a','b')", "day >= DATE '2024-01-01'", "flag = TRUE AND region IS NOT NULL"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := rowproof.Compile([]string{s}, resolve)
		if err != nil {
			return
		}
		for _, fl := range []file{eu, us, nullReg, statsEU, statsEUNull, statsEUUS, noStats, days} {
			c.Decide(fl.build(t), fl.spec)
		}
		if c.String() == "" {
			t.Fatal("empty canonical form")
		}
	})
}
