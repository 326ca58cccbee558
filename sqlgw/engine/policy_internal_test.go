package engine

import (
	"strconv"
	"testing"
)

// TestFilterCacheBounded fills the cache of checked row filters past its
// bound: it keeps defaultFilterEntries entries, the most recent ones.
func TestFilterCacheBounded(t *testing.T) {
	c, err := newFilterCache()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * defaultFilterEntries {
		c.Add("x = "+strconv.Itoa(i)+"\x00"+strconv.Itoa(i%7)+"=x", "(x = "+strconv.Itoa(i)+")")
	}
	if n := c.Len(); n != defaultFilterEntries {
		t.Fatalf("%d entries, want %d", n, defaultFilterEntries)
	}
	last := 3*defaultFilterEntries - 1
	if v, ok := c.Get("x = " + strconv.Itoa(last) + "\x00" + strconv.Itoa(last%7) + "=x"); !ok || v == "" {
		t.Fatal("the newest entry is gone")
	}
	if _, ok := c.Get("x = 0\x000=x"); ok {
		t.Fatal("the oldest entry is still there")
	}
}
