package maint

import "testing"

func TestStatsCacheBound(t *testing.T) {
	c := NewStatsCache(3)
	for i := range int64(5) {
		c.put(statsKey{table: "t", snapshot: i}, fileStatsOf{DataFiles: i, SizeHistogram: []SizeBucket{{Files: i}}})
		if i == 2 {
			c.get(statsKey{table: "t", snapshot: 0}) // 0 used: 1 is now the least recently used
		}
	}
	if n := c.Len(); n != 3 {
		t.Fatalf("%d entries, want the bound 3", n)
	}
	for _, tc := range []struct {
		snap int64
		held bool
	}{{0, true}, {1, false}, {2, false}, {3, true}, {4, true}} {
		s, ok := c.get(statsKey{table: "t", snapshot: tc.snap})
		if ok != tc.held || (ok && s.DataFiles != tc.snap) {
			t.Errorf("snapshot %d: held %v (%d files), want held %v", tc.snap, ok, s.DataFiles, tc.held)
		}
	}
	// What get returns is a copy: changing it leaves the cache alone.
	s, _ := c.get(statsKey{table: "t", snapshot: 4})
	s.SizeHistogram[0].Files = 99
	if s2, _ := c.get(statsKey{table: "t", snapshot: 4}); s2.SizeHistogram[0].Files != 4 {
		t.Fatal("a caller's change reached the cache")
	}
	var none *StatsCache
	none.put(statsKey{}, fileStatsOf{})
	if _, ok := none.get(statsKey{}); ok || none.Len() != 0 {
		t.Fatal("a nil cache held something")
	}
}
