package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// withCold gives the store a cold tier in a fresh directory beside the
// bucket root.
func withCold(t testing.TB) func(*Options) {
	dir := filepath.Join(t.TempDir(), "cold")
	return func(o *Options) { o.ColdDir = dir }
}

func both(fns ...func(*Options)) func(*Options) {
	return func(o *Options) {
		for _, f := range fns {
			f(o)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestMoveToCold moves objects to the cold tier, by hard link and by copy,
// plaintext and encrypted, and checks that they read, head, list, copy and
// delete as before, with the same ETag and metadata.
func TestMoveToCold(t *testing.T) {
	for _, tc := range []struct {
		name      string
		encrypted bool
		copy      bool
	}{
		{"link", false, false},
		{"copy", false, true},
		{"link-encrypted", true, false},
		{"copy-encrypted", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []func(*Options){withCold(t)}
			if tc.encrypted {
				opts = append(opts, withEncryption(t))
			}
			s := newTestStore(t, both(opts...))
			s.forceCopy = tc.copy
			ctx := context.Background()
			body := strings.Repeat("0123456789", 10_000)
			key := "wh/ns/t/data/part-0.parquet"
			before, err := s.Put(ctx, testBucket, key, strings.NewReader(body), PutOptions{Size: -1,
				ContentType: "application/vnd.apache.parquet", UserMetadata: map[string]string{"k": "v"}})
			if err != nil {
				t.Fatal(err)
			}
			put(t, s, "wh/ns/t/data/part-1.parquet", "hot")
			if err := s.MoveToCold(ctx, testBucket, key); err != nil {
				t.Fatalf("MoveToCold: %v", err)
			}
			hot := filepath.Join(s.Root(testBucket), filepath.FromSlash(key))
			cold := filepath.Join(s.ColdDir(testBucket), filepath.FromSlash(key))
			if exists(hot) || !exists(cold) {
				t.Fatalf("after the move: hot file exists %v, cold file exists %v", exists(hot), exists(cold))
			}
			if p, err := s.ObjectPath(testBucket, key); err != nil || p != cold {
				t.Fatalf("ObjectPath = %q, %v; want %q", p, err, cold)
			}
			if c, err := s.IsCold(testBucket, key); err != nil || !c {
				t.Fatalf("IsCold = %v, %v", c, err)
			}
			got, obj := get(t, s, key, GetOptions{})
			if got != body {
				t.Fatalf("Get after the move: %d bytes, want %d", len(got), len(body))
			}
			info := obj.Info
			if info.ETag != before.ETag || info.ContentType != before.ContentType || info.UserMetadata["k"] != "v" ||
				info.Size != before.Size || info.Encrypted != tc.encrypted || !info.LastModified.Equal(before.LastModified) {
				t.Fatalf("info after the move = %+v; before %+v", info, before)
			}
			// Ranged reads, conditional on the ETag (as the lake's FileIO does).
			part, _ := get(t, s, key, GetOptions{Range: "bytes=99990-100009", IfMatch: before.ETag})
			if part != "0123456789" {
				t.Fatalf("ranged Get = %q", part)
			}
			if h, err := s.Head(ctx, testBucket, key, GetOptions{}); err != nil || h.ETag != before.ETag {
				t.Fatalf("Head = %+v, %v", h, err)
			}
			if ok, err := s.FileIO().Exists(ctx, "s3://"+testBucket+"/"+key); err != nil || !ok {
				t.Fatalf("Exists = %v, %v", ok, err)
			}
			res, err := s.List(ctx, testBucket, ListOptions{Prefix: "wh/ns/t/data/"})
			if err != nil {
				t.Fatal(err)
			}
			if k := keysOf(res); !slices.Equal(k, []string{key, "wh/ns/t/data/part-1.parquet"}) || res.Objects[0].ETag != before.ETag {
				t.Fatalf("List = %q", k)
			}
			if _, err := s.Copy(ctx, testBucket, key, testBucket, "copy", PutOptions{}); err != nil {
				t.Fatalf("Copy from the cold tier: %v", err)
			}
			if got, _ := get(t, s, "copy", GetOptions{}); got != body {
				t.Fatal("copy differs")
			}
			if !tc.encrypted {
				if hits := grepTree(t, s.ColdDir(testBucket), []byte("0123456789")); len(hits) != 1 {
					t.Fatalf("plaintext in the cold tier: %q", hits)
				}
			} else if hits := grepTree(t, s.ColdDir(testBucket), []byte("0123456789")); len(hits) != 0 {
				t.Fatalf("the cold tier holds plaintext: %q", hits)
			}
			// Moving again is a no-op; the hot directory was pruned.
			if err := s.MoveToCold(ctx, testBucket, key); err != nil {
				t.Fatalf("second MoveToCold: %v", err)
			}
			// If-None-Match * sees the cold object.
			_, err = s.Put(ctx, testBucket, key, strings.NewReader("x"), PutOptions{Size: -1, IfNoneMatch: "*"})
			wantCode(t, err, CodePreconditionFailed)
			if err := s.Delete(ctx, testBucket, key); err != nil {
				t.Fatal(err)
			}
			if exists(cold) {
				t.Fatal("Delete left the cold file")
			}
			if _, err := s.Head(ctx, testBucket, key, GetOptions{}); !errors.Is(err, ErrNoSuchKey) {
				t.Fatalf("Head after Delete: %v", err)
			}
			wantCode(t, s.MoveToCold(ctx, testBucket, key), CodeNoSuchKey)
			if exists(filepath.Dir(cold)) {
				t.Fatal("Delete left the empty cold directory")
			}
		})
	}
}

func TestMoveToColdErrors(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, nil)
	put(t, s, "a", "x")
	if err := s.MoveToCold(ctx, testBucket, "a"); !errors.Is(err, ErrNoColdTier) {
		t.Fatalf("without a cold tier: %v", err)
	}
	if p, err := s.ObjectPath(testBucket, "a"); err != nil || p != filepath.Join(s.Root(testBucket), "a") {
		t.Fatalf("ObjectPath = %q, %v", p, err)
	}
	if got := s.Dirs(testBucket); !slices.Equal(got, []string{s.Root(testBucket)}) {
		t.Fatalf("Dirs = %q", got)
	}
	c := newTestStore(t, withCold(t))
	put(t, c, "dir/", "")
	for _, tc := range []struct {
		bucket, key, code string
	}{
		{"nope", "a", CodeNoSuchBucket},
		{testBucket, "missing", CodeNoSuchKey},
		{testBucket, "../x", CodeInvalidArgument},
		{testBucket, "dir/", CodeInvalidArgument},
		{testBucket, "dir", CodeNoSuchKey},
	} {
		wantCode(t, c.MoveToCold(ctx, tc.bucket, tc.key), tc.code)
	}
	if got := c.Dirs(testBucket); len(got) != 2 || got[1] != c.ColdDir(testBucket) {
		t.Fatalf("Dirs = %q", got)
	}
	// A cold dir inside the bucket root is refused.
	dir := t.TempDir()
	_, err := New(Options{Buckets: map[string]string{testBucket: filepath.Join(dir, "wh")}, ColdDir: filepath.Join(dir, "wh", "cold")})
	if err == nil || !strings.Contains(err.Error(), "inside bucket") {
		t.Fatalf("cold dir inside the bucket: %v", err)
	}
}

// TestPutReplacesColdCopy: a new object replaces the cold one, and reads
// see the new one.
func TestPutReplacesColdCopy(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, withCold(t))
	put(t, s, "k/v", "old")
	if err := s.MoveToCold(ctx, testBucket, "k/v"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "k/v", "new")
	if got, _ := get(t, s, "k/v", GetOptions{}); got != "new" {
		t.Fatalf("Get = %q", got)
	}
	if exists(filepath.Join(s.ColdDir(testBucket), "k", "v")) {
		t.Fatal("the replaced cold copy is still there")
	}
}

// TestColdCrashStates builds the states a crash can leave a move in and
// checks that the object is always readable, listed once, and that moving
// again (or a restart) finishes the job.
func TestColdCrashStates(t *testing.T) {
	ctx := context.Background()
	for _, state := range []string{"staged", "both"} {
		t.Run(state, func(t *testing.T) {
			dir := t.TempDir()
			now := time.Now()
			o := Options{Buckets: map[string]string{testBucket: filepath.Join(dir, "wh")}, ColdDir: filepath.Join(dir, "cold"),
				Now: func() time.Time { return now }}
			s, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			put(t, s, "t/data/f", "payload")
			hot := filepath.Join(s.Root(testBucket), "t", "data", "f")
			staging := filepath.Join(dir, "cold", coldStagingName)
			switch state {
			case "staged": // crashed after staging, before the rename
				if err := os.Link(hot, filepath.Join(staging, s.moveName())); err != nil {
					t.Fatal(err)
				}
			case "both": // crashed after the rename, before removing the root's copy
				cold := filepath.Join(s.ColdDir(testBucket), "t", "data", "f")
				if err := os.MkdirAll(filepath.Dir(cold), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(hot, cold); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := get(t, s, "t/data/f", GetOptions{}); got != "payload" {
				t.Fatalf("Get = %q", got)
			}
			res, err := s.List(ctx, testBucket, ListOptions{})
			if err != nil || !slices.Equal(keysOf(res), []string{"t/data/f"}) {
				t.Fatalf("List = %q, %v", keysOf(res), err)
			}
			_ = s.Close()
			// A restart more than an hour later removes the stale staging file.
			now = now.Add(2 * time.Hour)
			if s, err = New(o); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if left, _ := os.ReadDir(staging); len(left) != 0 {
				t.Fatalf("staging after restart: %v", left)
			}
			if err := s.MoveToCold(ctx, testBucket, "t/data/f"); err != nil {
				t.Fatal(err)
			}
			if got, _ := get(t, s, "t/data/f", GetOptions{}); got != "payload" || exists(hot) {
				t.Fatalf("after finishing the move: %q, hot exists %v", got, exists(hot))
			}
		})
	}
}

// TestMoveToColdConcurrentReaders moves objects while readers read them:
// every read succeeds with the right bytes.
func TestMoveToColdConcurrentReaders(t *testing.T) {
	for _, copyMode := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy=%v", copyMode), func(t *testing.T) {
			ctx := context.Background()
			s := newTestStore(t, withCold(t))
			s.forceCopy = copyMode
			const n = 40
			body := func(i int) string { return strings.Repeat(fmt.Sprintf("object %d;", i), 500) }
			for i := range n {
				put(t, s, fmt.Sprintf("d%d/f%d", i%4, i), body(i))
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			errc := make(chan error, 8)
			for r := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(r), 7))
					for {
						select {
						case <-stop:
							return
						default:
						}
						i := rng.IntN(n)
						key := fmt.Sprintf("d%d/f%d", i%4, i)
						obj, err := s.Get(ctx, testBucket, key, GetOptions{})
						if err != nil {
							errc <- fmt.Errorf("Get %s: %w", key, err)
							return
						}
						b, err := io.ReadAll(obj.Body)
						_ = obj.Body.Close()
						if err != nil || string(b) != body(i) {
							errc <- fmt.Errorf("Get %s: %d bytes, %v", key, len(b), err)
							return
						}
						if _, err := s.List(ctx, testBucket, ListOptions{Prefix: fmt.Sprintf("d%d/", i%4)}); err != nil {
							errc <- err
							return
						}
					}
				}()
			}
			for i := range n {
				if err := s.MoveToCold(ctx, testBucket, fmt.Sprintf("d%d/f%d", i%4, i)); err != nil {
					t.Errorf("MoveToCold %d: %v", i, err)
				}
			}
			close(stop)
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Error(err)
			}
			res, err := s.List(ctx, testBucket, ListOptions{})
			if err != nil || len(res.Objects) != n {
				t.Fatalf("List: %d objects, %v", len(res.Objects), err)
			}
		})
	}
}

// TestMoveToColdRacingPut: a Put of the same key during a move is never
// lost; the move either happens before it or gives up.
func TestMoveToColdRacingPut(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, withCold(t))
	s.forceCopy = true // a longer window between staging and publishing
	for i := range 50 {
		key := fmt.Sprintf("k%d", i)
		put(t, s, key, strings.Repeat("old", 10_000))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.MoveToCold(ctx, testBucket, key); err != nil && !errors.Is(err, ErrPreconditionFailed) {
				t.Errorf("MoveToCold: %v", err)
			}
		}()
		put(t, s, key, "new")
		wg.Wait()
		if got, _ := get(t, s, key, GetOptions{}); got != "new" {
			t.Fatalf("round %d: Get = %d bytes of %.3q; the new object was lost", i, len(got), got)
		}
	}
}

// TestListMergesColdTier checks every page of many listings of a bucket
// whose keys are spread over both tiers (some in both) against the sorted
// reference.
func TestListMergesColdTier(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "-", "/", ".", "z", "a-", "/a"}
	ctx := context.Background()
	for round := range 3 {
		s := newTestStore(t, withCold(t))
		var keys []string
		for range 120 {
			var sb strings.Builder
			for range 1 + rng.IntN(6) {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			k := sb.String()
			if _, err := s.Put(ctx, testBucket, k, strings.NewReader(k), PutOptions{Size: -1}); err != nil {
				continue
			}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch rng.IntN(3) {
			case 0: // cold
				if err := s.MoveToCold(ctx, testBucket, k); err != nil && CodeOf(err) != CodeInvalidArgument {
					t.Fatalf("MoveToCold %q: %v", k, err)
				}
			case 1: // in both tiers (a move cut short)
				if strings.HasSuffix(k, "/") {
					continue
				}
				cold := filepath.Join(s.ColdDir(testBucket), filepath.FromSlash(k))
				if err := os.MkdirAll(filepath.Dir(cold), 0o750); err != nil {
					continue // a cold file is in the way: the key conflicts there
				}
				_ = os.Link(filepath.Join(s.Root(testBucket), filepath.FromSlash(k)), cold)
			}
		}
		for _, prefix := range []string{"", "a", "a/", "-", "/", "b/", "z"} {
			for _, delim := range []string{"", "/", "-"} {
				for _, max := range []int{1, 2, 7, 1000} {
					o := ListOptions{Prefix: prefix, Delimiter: delim, MaxKeys: max}
					wantObjs, wantCPs, _, _ := refList(keys, ListOptions{Prefix: prefix, Delimiter: delim}, "")
					var gotObjs, gotCPs []string
					for page := 0; ; page++ {
						res, err := s.List(ctx, testBucket, o)
						if err != nil {
							t.Fatal(err)
						}
						if res.KeyCount > max || res.KeyCount == 0 && res.IsTruncated {
							t.Fatalf("page of %d keys (max %d, truncated %v)", res.KeyCount, max, res.IsTruncated)
						}
						for _, obj := range res.Objects {
							if obj.Size != int64(len(obj.Key)) {
								t.Fatalf("size of %q = %d", obj.Key, obj.Size)
							}
						}
						gotObjs = append(gotObjs, keysOf(res)...)
						gotCPs = append(gotCPs, res.CommonPrefixes...)
						if !res.IsTruncated {
							break
						}
						if page > len(keys)+1 {
							t.Fatal("listing does not end")
						}
						o.ContinuationToken = res.NextContinuationToken
					}
					if !slices.Equal(gotObjs, wantObjs) || !slices.Equal(gotCPs, wantCPs) {
						t.Fatalf("round %d %+v:\n got  %q %q\n want %q %q", round, o, gotObjs, gotCPs, wantObjs, wantCPs)
					}
				}
			}
		}
	}
}
