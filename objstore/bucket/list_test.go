package bucket

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func keysOf(res ListResult) []string {
	var out []string
	for _, o := range res.Objects {
		out = append(out, o.Key)
	}
	return out
}

// refList is the reference: one page over a flat sorted key list.
func refList(sorted []string, o ListOptions, after string) (objs, cps []string, truncated bool, last string) {
	max := o.MaxKeys
	if max <= 0 || max > MaxListKeys {
		max = MaxListKeys
	}
	n, lastCP := 0, ""
	for _, k := range sorted {
		if !strings.HasPrefix(k, o.Prefix) || k <= after {
			continue
		}
		item, isCP := k, false
		if o.Delimiter != "" {
			if j := strings.Index(k[len(o.Prefix):], o.Delimiter); j >= 0 {
				item, isCP = k[:len(o.Prefix)+j+len(o.Delimiter)], true
				if item <= after || item == lastCP {
					continue
				}
			}
		}
		if n == max {
			return objs, cps, true, last
		}
		n++
		last = item
		if isCP {
			lastCP = item
			cps = append(cps, item)
		} else {
			objs = append(objs, item)
		}
	}
	return objs, cps, false, last
}

// TestListMatchesReference stores random key sets (with '-', '/', '.'
// around so that directory order and key order differ) and checks every
// page of many listings against a sorted reference.
func TestListMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "-", "/", ".", "z", "a-", "/a", "é"}
	for round := range 4 {
		s := newTestStore(t, nil)
		ctx := context.Background()
		var keys []string
		for range 100 {
			var sb strings.Builder
			for range 1 + rng.IntN(7) {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			k := sb.String()
			if _, err := s.Put(ctx, testBucket, k, strings.NewReader(k), PutOptions{Size: -1}); err != nil {
				if c := CodeOf(err); c != CodeKeyConflict && c != CodeInvalidArgument {
					t.Fatalf("Put %q: %v", k, err)
				}
				continue
			}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		prefixes := []string{"", "a", "a/", "a-", "b/", "z", "a/b", "-", "/", "zz", "a//", "../"}
		for _, k := range keys[:min(len(keys), 10)] {
			prefixes = append(prefixes, k[:len(k)/2])
		}
		for _, prefix := range prefixes {
			for _, delim := range []string{"", "/", "-", "a/"} {
				for _, max := range []int{1, 3, 1000} {
					o := ListOptions{Prefix: prefix, Delimiter: delim, MaxKeys: max}
					if rng.IntN(3) == 0 && len(keys) > 0 {
						o.StartAfter = keys[rng.IntN(len(keys))]
					}
					after := o.StartAfter
					for page := 0; ; page++ {
						res, err := s.List(ctx, testBucket, o)
						if err != nil {
							t.Fatalf("round %d: List(%+v): %v", round, o, err)
						}
						objs, cps, trunc, _ := refList(keys, o, after)
						got := keysOf(res)
						if !slices.Equal(got, objs) || !slices.Equal(res.CommonPrefixes, cps) || res.IsTruncated != trunc ||
							res.KeyCount != len(objs)+len(cps) {
							t.Fatalf("round %d, %+v page %d (after %q):\n got  %q %q %v\n want %q %q %v\nkeys %q",
								round, o, page, after, got, res.CommonPrefixes, res.IsTruncated, objs, cps, trunc, keys)
						}
						for _, obj := range res.Objects {
							if obj.Size != int64(len(obj.Key)) {
								t.Fatalf("size of %q = %d", obj.Key, obj.Size)
							}
						}
						if !res.IsTruncated {
							break
						}
						o.ContinuationToken = res.NextContinuationToken
						_, _, _, after = refList(keys, ListOptions{Prefix: prefix, Delimiter: delim, MaxKeys: max}, after)
					}
				}
			}
		}
	}
}

func TestListBadToken(t *testing.T) {
	s := newTestStore(t, nil)
	_, err := s.List(context.Background(), testBucket, ListOptions{ContinuationToken: "%%%"})
	wantCode(t, err, CodeInvalidArgument)
	_, err = s.List(context.Background(), "nope", ListOptions{})
	wantCode(t, err, CodeNoSuchBucket)
}

// An empty directory left behind is not a common prefix, and an
// Iceberg-like layout lists by table.
func TestListDelimiterLayout(t *testing.T) {
	s := newTestStore(t, nil)
	ctx := context.Background()
	for _, k := range []string{"wh/ns/t1/metadata/v1.json", "wh/ns/t1/data/a.parquet", "wh/ns/t2/data/b.parquet", "wh/ns-x/f"} {
		put(t, s, k, "x")
	}
	if err := os.MkdirAll(filepath.Join(s.Root(testBucket), "wh", "ns", "empty", "deeper"), 0o750); err != nil {
		t.Fatal(err)
	}
	res, err := s.List(ctx, testBucket, ListOptions{Prefix: "wh/ns/", Delimiter: "/"})
	wantCode(t, err, "")
	if strings.Join(res.CommonPrefixes, ",") != "wh/ns/t1/,wh/ns/t2/" || len(res.Objects) != 0 {
		t.Fatalf("got %+v", res)
	}
	res, err = s.List(ctx, testBucket, ListOptions{Prefix: "wh/", Delimiter: "/"})
	wantCode(t, err, "")
	if strings.Join(res.CommonPrefixes, ",") != "wh/ns-x/,wh/ns/" {
		t.Fatalf("got %+v", res.CommonPrefixes)
	}
	res, err = s.List(ctx, testBucket, ListOptions{Prefix: "wh/ns"})
	wantCode(t, err, "")
	if strings.Join(keysOf(res), ",") != "wh/ns-x/f,wh/ns/t1/data/a.parquet,wh/ns/t1/metadata/v1.json,wh/ns/t2/data/b.parquet" {
		t.Fatalf("got %v", keysOf(res))
	}
}

// Many objects in one directory page correctly.
func TestListManyObjects(t *testing.T) {
	n := 5000
	if os.Getenv("FLOE_BUCKET_BIG") != "" {
		n = 100000 // the spec's size: 100k objects under one prefix
	}
	s := newTestStore(t, nil)
	dir := filepath.Join(s.Root(testBucket), "t", "data")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f-%06d.parquet", i)), nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	o := ListOptions{Prefix: "t/data/f-"}
	seen, start := 0, time.Now()
	for {
		res, err := s.List(context.Background(), testBucket, o)
		wantCode(t, err, "")
		for _, obj := range res.Objects {
			if want := fmt.Sprintf("t/data/f-%06d.parquet", seen); obj.Key != want {
				t.Fatalf("key %d = %q; want %q", seen, obj.Key, want)
			}
			seen++
		}
		if !res.IsTruncated {
			break
		}
		o.ContinuationToken = res.NextContinuationToken
	}
	if seen != n {
		t.Fatalf("listed %d of %d", seen, n)
	}
	t.Logf("listed %d objects in pages of %d in %v", n, MaxListKeys, time.Since(start))
}

func TestCatHelpers(t *testing.T) {
	words := []string{"", "a", "ab", "a/", "b", "abc", "a-", "/"}
	for _, a := range words {
		for _, b := range words {
			for _, x := range words {
				if got, want := catCompare(a, b, x), strings.Compare(a+b, x); got != want {
					t.Fatalf("catCompare(%q, %q, %q) = %d; want %d", a, b, x, got, want)
				}
				if got, want := prefixOfCat(x, a, b), strings.HasPrefix(x, a+b); got != want {
					t.Fatalf("prefixOfCat(%q, %q, %q) = %v; want %v", x, a, b, got, want)
				}
			}
		}
	}
}
