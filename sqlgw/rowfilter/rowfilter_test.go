package rowfilter

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/floe-lake/floe"
)

func TestColumns(t *testing.T) {
	p := New()
	t.Cleanup(func() { p.Close() })
	for _, tt := range []struct {
		filter string
		want   []string // nil with bad set
		bad    string
	}{
		{filter: "region = 'EMEA'", want: []string{"region"}},
		{filter: "t.region = 'EMEA' AND lower(email) LIKE '%@example.com'", want: []string{"email", "region"}},
		{filter: `"Region" IN ('EMEA', 'APAC') OR annual_revenue > 1e6`, want: []string{"Region", "annual_revenue"}},
		{filter: "CAST(created AS DATE) >= DATE '2025-01-01' AND NOT deleted", want: []string{"created", "deleted"}},
		{filter: "country = 'DE' -- a comment", want: []string{"country"}},
		{filter: "true", want: []string{}},
		{filter: "((region", bad: "not valid SQL"},
		{filter: "region = 'x'); DROP TABLE t; --", bad: "not valid SQL"},
		{filter: "region = 'x'\n); SELECT 1; SELECT (1", bad: "one SQL boolean expression"},
		{filter: "region IN (SELECT region FROM other)", bad: "subquery"},
		{filter: "region = 'x') GROUP BY (region", bad: "one SQL boolean expression"},
		{filter: "", bad: "empty"},
	} {
		got, err := p.Columns(t.Context(), tt.filter)
		if tt.bad != "" {
			if floe.KindOf(err) != floe.Invalid || !strings.Contains(floe.PublicMessage(err), tt.bad) {
				t.Errorf("Columns(%q) = %v, %v; want Invalid containing %q", tt.filter, got, err, tt.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("Columns(%q): %v", tt.filter, err)
			continue
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Columns(%q) = %q, want %q", tt.filter, got, tt.want)
		}
	}
}

// FuzzColumns: any input gives column names or an Invalid error, never a
// panic or another kind of error.
func FuzzColumns(f *testing.F) {
	for _, s := range []string{"region = 'EMEA'", "a) OR (b", "x IN (SELECT 1)", "'", "\"", "/*", "--", "t.a.b = 1"} {
		f.Add(s)
	}
	p := New()
	f.Cleanup(func() { p.Close() })
	f.Fuzz(func(t *testing.T, s string) {
		_, err := p.Columns(t.Context(), s)
		if err != nil && floe.KindOf(err) != floe.Invalid {
			t.Fatalf("Columns(%q) = %v (kind %v), want Invalid or success", s, err, floe.KindOf(err))
		}
	})
}

// TestOneConnection: concurrent callers share the parser's one DuckDB
// connection (its bound), and all get their answer.
func TestOneConnection(t *testing.T) {
	p := New()
	t.Cleanup(func() { p.Close() })
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cols, err := p.Columns(t.Context(), fmt.Sprintf("c%d = %d", i, i))
			if err == nil && (len(cols) != 1 || cols[0] != fmt.Sprintf("c%d", i)) {
				err = fmt.Errorf("got %q", cols)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	p.mu.Lock()
	st := p.db.Stats()
	p.mu.Unlock()
	if st.MaxOpenConnections != 1 || st.OpenConnections > 1 {
		t.Fatalf("parser connections: %+v", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Columns(t.Context(), "a = 1"); err == nil {
		t.Fatal("Columns after Close succeeded")
	}
}

// BenchmarkColumns is what checking a row filter adds to making a grant.
func BenchmarkColumns(b *testing.B) {
	p := New()
	b.Cleanup(func() { p.Close() })
	for b.Loop() {
		if _, err := p.Columns(b.Context(), "region = 'EMEA' AND lower(email) LIKE '%@example.com'"); err != nil {
			b.Fatal(err)
		}
	}
}
