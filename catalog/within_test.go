package catalog

import (
	"strings"
	"testing"
)

func TestWithin(t *testing.T) {
	const root = "s3://floe/sandbox/t-1"
	tests := []struct {
		loc  string
		want bool
	}{
		{"s3://floe/sandbox/t-1/data/a.parquet", true},
		{"s3://floe/sandbox/t-1", true},
		{"s3://floe/sandbox/t-1/", true},
		{"S3A://floe/sandbox/t-1/data/a.parquet", true},
		{"s3n://floe/sandbox//t-1/./data/a.parquet", true},
		{"s3://floe/sandbox/t-1/data/a%20b.parquet", true},
		{"s3://floe/sandbox/t-10/data/a.parquet", false},
		{"s3://floe/sandbox/t-1/../t-2/a.parquet", false},
		{"s3://floe/sandbox/t-1/%2e%2e/t-2/a.parquet", false},
		{"s3://floe/sandbox/t-1/%2E%2E/t-2/a.parquet", false},
		{"s3://floe/sandbox/t-1/a%2f..%2f..%2fx.parquet", false},
		{"s3://floe/sandbox/t-1/a%5c..%5cx.parquet", false},
		{"s3://floe/sandbox/t-1/a\\..\\x.parquet", false},
		{"s3://floe/sandbox/t-1/bad%zz.parquet", false},
		{"s3://other/sandbox/t-1/a.parquet", false},
		{"gs://floe/sandbox/t-1/a.parquet", false},
		{"s3://floe/hr/payroll/data/a.parquet", false},
		{"s3://floe/sandbox", false},
		{"sandbox/t-1/a.parquet", false},
		{"", false},
		{"file:///sandbox/t-1/a.parquet", false},
	}
	for _, tc := range tests {
		if got := Within(root, tc.loc); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", root, tc.loc, got, tc.want)
		}
	}
	if !Within("/var/wh/t", "file:///var/wh/t/a.parquet") || Within("/var/wh/t", "file:///var/wh/u/a.parquet") {
		t.Error("file locations")
	}
	if Within("s3://floe/a/../b", "s3://floe/b/x.parquet") {
		t.Error("a root with .. confines nothing")
	}
}

// FuzzWithin: whatever the location, a file Within reports inside a root
// names, after resolving "." and ".." (decoded or not) the way any reader
// could, an object under that root.
func FuzzWithin(f *testing.F) {
	for _, s := range []string{"s3://floe/t/a.parquet", "s3://floe/t/../u", "s3://floe/t/%2e%2e/u", "s3a://floe//t/./x", "/t/x", "s3://floe/t%2f..%2fu"} {
		f.Add(s)
	}
	const root = "s3://floe/t"
	f.Fuzz(func(t *testing.T, loc string) {
		if !Within(root, loc) {
			return
		}
		k, ok := confineKey(loc)
		if !ok || !(k == root || strings.HasPrefix(k, root+"/")) {
			t.Fatalf("Within(%q) but key %q", loc, k)
		}
		for _, seg := range strings.Split(strings.TrimPrefix(k, "s3://floe/"), "/") {
			if seg == ".." || strings.Contains(strings.ToLower(seg), "%2e%2e") && len(seg) == 6 {
				t.Fatalf("Within(%q) with segment %q", loc, seg)
			}
		}
		if n, err := normalizeLocation(loc); err == nil {
			for _, alias := range []string{"s3a://", "s3n://"} {
				if rest, ok := strings.CutPrefix(n, alias); ok {
					n = "s3://" + rest
				}
			}
			if !within(root, n) {
				t.Fatalf("Within(%q) but it resolves to %q", loc, n)
			}
		}
	})
}

// TestCheckedListsBounded: the cache of checked manifest lists holds at
// most its number of lists and of manifest paths, least recently used out
// first, and never a list larger than the whole budget.
func TestCheckedListsBounded(t *testing.T) {
	c := newCheckedLists(3, 10)
	set := func(n int) map[string]bool {
		m := map[string]bool{}
		for i := range n {
			m[string(rune('a'+i))] = true
		}
		return m
	}
	for _, l := range []string{"l1", "l2", "l3", "l4"} {
		c.add("r", l, set(1))
	}
	if n, p := c.len(); n != 3 || p != 3 {
		t.Fatalf("%d lists, %d paths; want 3, 3", n, p)
	}
	if _, ok := c.get("r", "l1"); ok {
		t.Error("l1 should have gone first")
	}
	if _, ok := c.get("other-root", "l2"); ok {
		t.Error("a list checked against one location serves another")
	}
	c.get("r", "l2") // l2 is now the most recently used
	c.add("r", "big", set(9))
	if n, p := c.len(); p > 10 || n > 3 {
		t.Fatalf("%d lists, %d paths over the bounds", n, p)
	}
	if _, ok := c.get("r", "big"); !ok {
		t.Error("the newest list was evicted")
	}
	c.add("r", "huge", set(11))
	if _, ok := c.get("r", "huge"); ok {
		t.Error("a list over the whole budget was kept")
	}
	if _, p := c.len(); p > 10 {
		t.Fatalf("%d paths over the bound", p)
	}
}
