package bucket

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
)

func TestPutGetHead(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("encrypted=%v", enc), func(t *testing.T) {
			var opt func(*Options)
			if enc {
				opt = withEncryption(t)
			}
			s := newTestStore(t, opt)
			ctx := context.Background()
			body := strings.Repeat("hello floe ", 20000)
			info, err := s.Put(ctx, testBucket, "ns/t/data/f.parquet", strings.NewReader(body), PutOptions{
				ContentType: "application/x-parquet", UserMetadata: map[string]string{"owner": "crm"},
				Checksums: map[string]string{"crc32": "AAAAAA=="}, Size: int64(len(body)),
			})
			wantCode(t, err, "")
			if info.Size != int64(len(body)) || info.Encrypted != enc || !strings.HasPrefix(info.ETag, `"`) || len(info.ETag) != 34 {
				t.Fatalf("put info = %+v", info)
			}
			got, obj := get(t, s, "ns/t/data/f.parquet", GetOptions{})
			if got != body {
				t.Fatalf("body mismatch: %d bytes", len(got))
			}
			h, err := s.Head(ctx, testBucket, "ns/t/data/f.parquet", GetOptions{})
			wantCode(t, err, "")
			for _, gi := range []ObjectInfo{obj.Info, h} {
				if gi.ETag != info.ETag || gi.Size != info.Size || gi.ContentType != "application/x-parquet" ||
					gi.UserMetadata["owner"] != "crm" || gi.Checksums["crc32"] != "AAAAAA==" || gi.Encrypted != enc ||
					!gi.LastModified.Equal(info.LastModified) {
					t.Fatalf("info = %+v; put returned %+v", gi, info)
				}
			}
			// Same content, same ETag; the file on disk is plain unless encrypted.
			info2 := put(t, s, "other", body)
			if info2.ETag != info.ETag {
				t.Fatalf("etag differs for same content: %s vs %s", info2.ETag, info.ETag)
			}
			raw, err := os.ReadFile(filepath.Join(s.Root(testBucket), "ns/t/data/f.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			if (string(raw) == body) == enc {
				t.Fatalf("on-disk plaintext = %v, encrypted = %v", string(raw) == body, enc)
			}
			// Empty object.
			put(t, s, "empty", "")
			if got, obj := get(t, s, "empty", GetOptions{}); got != "" || obj.Info.Size != 0 {
				t.Fatalf("empty object: %q %+v", got, obj.Info)
			}
			_, err = s.Get(ctx, testBucket, "missing", GetOptions{})
			wantCode(t, err, CodeNoSuchKey)
			_, err = s.Get(ctx, "nobucket", "x", GetOptions{})
			wantCode(t, err, CodeNoSuchBucket)
			_, err = s.Head(ctx, testBucket, "ns", GetOptions{}) // a directory
			wantCode(t, err, CodeNoSuchKey)
			_, err = s.Put(ctx, testBucket, "../x", strings.NewReader("x"), PutOptions{Size: -1})
			wantCode(t, err, CodeInvalidArgument)
		})
	}
}

func TestPutBodyChecks(t *testing.T) {
	s := newTestStore(t, nil)
	ctx := context.Background()
	sum := md5.Sum([]byte("abc"))
	tests := []struct {
		name string
		body string
		o    PutOptions
		code string
	}{
		{"ok", "abc", PutOptions{Size: 3, ContentMD5: sum[:]}, ""},
		{"bad md5", "abd", PutOptions{Size: 3, ContentMD5: sum[:]}, CodeBadDigest},
		{"short", "ab", PutOptions{Size: 3}, CodeIncompleteBody},
		{"long", "abcd", PutOptions{Size: 3}, CodeInvalidArgument},
		{"metadata too large", "x", PutOptions{Size: -1, UserMetadata: map[string]string{"k": strings.Repeat("v", 3000)}}, CodeMetadataTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Put(ctx, testBucket, "k", strings.NewReader(tt.body), tt.o)
			wantCode(t, err, tt.code)
		})
	}
	// Failed puts leave nothing behind in staging.
	if des, _ := os.ReadDir(filepath.Join(s.tempDir, stagingSub)); len(des) != 0 {
		t.Fatalf("staging not empty: %v", des)
	}
	// A body reader's own *Error (e.g. a signature check) passes through.
	_, err := s.Put(ctx, testBucket, "k", io.MultiReader(strings.NewReader("x"), errReader{&Error{Code: "XAmzContentSHA256Mismatch", Status: 400}}), PutOptions{Size: -1})
	wantCode(t, err, "XAmzContentSHA256Mismatch")
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestParseRange(t *testing.T) {
	tests := []struct {
		h     string
		size  int64
		want  Range
		ok    bool
		unsat bool
	}{
		{"", 10, Range{}, false, false},
		{"bytes=0-4", 10, Range{0, 4}, true, false},
		{"bytes=5-", 10, Range{5, 9}, true, false},
		{"bytes=-3", 10, Range{7, 9}, true, false},
		{"bytes=-30", 10, Range{0, 9}, true, false},
		{"bytes=3-100", 10, Range{3, 9}, true, false},
		{"bytes=9-9", 10, Range{9, 9}, true, false},
		{"Bytes=1-2", 10, Range{1, 2}, true, false},
		{"bytes= 1-2 ", 10, Range{1, 2}, true, false},
		{"bytes=10-", 10, Range{}, false, true},
		{"bytes=10-20", 10, Range{}, false, true},
		{"bytes=-0", 10, Range{}, false, true},
		{"bytes=0-", 0, Range{}, false, true},
		{"bytes=-5", 0, Range{}, false, false},
		{"bytes=5-3", 10, Range{}, false, false},
		{"bytes=1-2,4-5", 10, Range{}, false, false},
		{"bytes=a-b", 10, Range{}, false, false},
		{"bytes=+1-2", 10, Range{}, false, false},
		{"bytes=1", 10, Range{}, false, false},
		{"items=1-2", 10, Range{}, false, false},
		{"bytes=99999999999999999999-", 10, Range{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.h, func(t *testing.T) {
			r, ok, err := ParseRange(tt.h, tt.size)
			if tt.unsat {
				wantCode(t, err, CodeInvalidRange)
				return
			}
			wantCode(t, err, "")
			if ok != tt.ok || r != tt.want {
				t.Fatalf("ParseRange(%q, %d) = %+v, %v; want %+v, %v", tt.h, tt.size, r, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzParseRange(f *testing.F) {
	for _, h := range []string{"bytes=0-4", "bytes=-3", "bytes=5-", "bytes=1-2,3-4", "bytes=-0", "bytes=", "bytes=--1"} {
		f.Add(h, int64(10))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
			if size < 0 {
				return
			}
		}
		r, ok, err := ParseRange(h, size)
		if err != nil {
			if CodeOf(err) != CodeInvalidRange || ok {
				t.Fatalf("ParseRange(%q, %d): %v ok=%v", h, size, err, ok)
			}
			return
		}
		if ok && (r.Start < 0 || r.End < r.Start || r.End >= size) {
			t.Fatalf("ParseRange(%q, %d) = %+v out of bounds", h, size, r)
		}
	})
}

func TestGetRange(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("encrypted=%v", enc), func(t *testing.T) {
			var opt func(*Options)
			if enc {
				opt = withEncryption(t)
			}
			s := newTestStore(t, opt)
			body := make([]byte, 3*65536+123)
			for i := range body {
				body[i] = byte(i * 7)
			}
			put(t, s, "obj", string(body))
			size := int64(len(body))
			for _, r := range []Range{{0, 0}, {0, size - 1}, {1, 65535}, {65535, 65536}, {65536, 3 * 65536}, {size - 1, size - 1}, {100, 200}} {
				got, obj := get(t, s, "obj", GetOptions{Range: fmt.Sprintf("bytes=%d-%d", r.Start, r.End)})
				if obj.Range == nil || *obj.Range != r {
					t.Fatalf("range = %v; want %v", obj.Range, r)
				}
				if got != string(body[r.Start:r.End+1]) {
					t.Fatalf("range %v: wrong bytes", r)
				}
				// The WriteTo path (io.Copy into a non-ReaderFrom writer).
				obj2, err := s.Get(context.Background(), testBucket, "obj", GetOptions{Range: fmt.Sprintf("bytes=%d-%d", r.Start, r.End)})
				wantCode(t, err, "")
				var sink onlyWriter
				if _, err := io.Copy(&sink, obj2.Body); err != nil {
					t.Fatal(err)
				}
				_ = obj2.Body.Close()
				if sink.String() != string(body[r.Start:r.End+1]) {
					t.Fatalf("range %v via WriteTo: wrong bytes", r)
				}
			}
			got, _ := get(t, s, "obj", GetOptions{Range: "bytes=-10"})
			if got != string(body[size-10:]) {
				t.Fatal("suffix range wrong")
			}
			_, err := s.Get(context.Background(), testBucket, "obj", GetOptions{Range: fmt.Sprintf("bytes=%d-", size)})
			wantCode(t, err, CodeInvalidRange)
		})
	}
}

type onlyWriter struct{ bytes.Buffer }

func (w *onlyWriter) Write(p []byte) (int, error) { return w.Buffer.Write(p) }

func TestConditionalGet(t *testing.T) {
	s := newTestStore(t, nil)
	info := put(t, s, "k", "v")
	mod := info.LastModified
	before, after := mod.Add(-time.Hour), mod.Add(time.Hour)
	tests := []struct {
		name string
		o    GetOptions
		code string
	}{
		{"none", GetOptions{}, ""},
		{"if-match ok", GetOptions{IfMatch: info.ETag}, ""},
		{"if-match unquoted", GetOptions{IfMatch: strings.Trim(info.ETag, `"`)}, ""},
		{"if-match list", GetOptions{IfMatch: `"x", ` + info.ETag}, ""},
		{"if-match star", GetOptions{IfMatch: "*"}, ""},
		{"if-match bad", GetOptions{IfMatch: `"nope"`}, CodePreconditionFailed},
		{"if-none-match hit", GetOptions{IfNoneMatch: info.ETag}, CodeNotModified},
		{"if-none-match star", GetOptions{IfNoneMatch: "*"}, CodeNotModified},
		{"if-none-match miss", GetOptions{IfNoneMatch: `"nope"`}, ""},
		{"if-modified-since past", GetOptions{IfModifiedSince: before}, ""},
		{"if-modified-since future", GetOptions{IfModifiedSince: after}, CodeNotModified},
		{"if-modified-since same second", GetOptions{IfModifiedSince: mod.Truncate(time.Second)}, CodeNotModified},
		{"if-unmodified-since future", GetOptions{IfUnmodifiedSince: after}, ""},
		{"if-unmodified-since past", GetOptions{IfUnmodifiedSince: before}, CodePreconditionFailed},
		{"if-match wins over unmodified-since", GetOptions{IfMatch: info.ETag, IfUnmodifiedSince: before}, ""},
		{"if-none-match wins over modified-since", GetOptions{IfNoneMatch: `"nope"`, IfModifiedSince: after}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := s.Get(context.Background(), testBucket, "k", tt.o)
			wantCode(t, err, tt.code)
			if err == nil {
				_ = obj.Body.Close()
			}
			_, err = s.Head(context.Background(), testBucket, "k", tt.o)
			wantCode(t, err, tt.code)
		})
	}
}

func TestConditionalPut(t *testing.T) {
	s := newTestStore(t, nil)
	ctx := context.Background()
	p := func(key, body string, o PutOptions) (ObjectInfo, error) {
		o.Size = -1
		return s.Put(ctx, testBucket, key, strings.NewReader(body), o)
	}
	_, err := p("k", "1", PutOptions{IfNoneMatch: "*"})
	wantCode(t, err, "")
	_, err = p("k", "2", PutOptions{IfNoneMatch: "*"})
	wantCode(t, err, CodePreconditionFailed)
	if got, _ := get(t, s, "k", GetOptions{}); got != "1" {
		t.Fatalf("content = %q after refused create", got)
	}
	cur, _ := s.Head(ctx, testBucket, "k", GetOptions{})
	_, err = p("k", "3", PutOptions{IfMatch: `"0123"`})
	wantCode(t, err, CodePreconditionFailed)
	_, err = p("k", "3", PutOptions{IfNoneMatch: cur.ETag})
	wantCode(t, err, CodePreconditionFailed)
	_, err = p("k", "3", PutOptions{IfMatch: cur.ETag})
	wantCode(t, err, "")
	_, err = p("missing", "3", PutOptions{IfMatch: cur.ETag})
	wantCode(t, err, CodeNoSuchKey)
	_, err = p("missing2", "3", PutOptions{IfNoneMatch: `"abc"`})
	wantCode(t, err, "")
	if des, _ := os.ReadDir(filepath.Join(s.tempDir, stagingSub)); len(des) != 0 {
		t.Fatalf("staging not empty: %v", des)
	}
}

// Concurrent If-None-Match: * creators: exactly one wins.
func TestConcurrentCreate(t *testing.T) {
	s := newTestStore(t, nil)
	const n = 16
	var wins, fails atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := s.Put(context.Background(), testBucket, "race/k", strings.NewReader(fmt.Sprint(i)), PutOptions{Size: -1, IfNoneMatch: "*"})
			switch CodeOf(err) {
			case "":
				if err != nil {
					t.Error(err)
				}
				wins.Add(1)
			case CodePreconditionFailed:
				fails.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || fails.Load() != n-1 {
		t.Fatalf("wins = %d, fails = %d", wins.Load(), fails.Load())
	}
}

// A reader racing a writer sees the old or the new object, never a mix.
func TestReadersSeeWholeObjects(t *testing.T) {
	s := newTestStore(t, nil)
	const size = 256 << 10
	bodies := []string{strings.Repeat("a", size), strings.Repeat("b", size+17)}
	put(t, s, "k", bodies[0])
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := s.Put(context.Background(), testBucket, "k", strings.NewReader(bodies[i%2]), PutOptions{Size: -1}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var reads atomic.Int32
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				obj, err := s.Get(context.Background(), testBucket, "k", GetOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(obj.Body)
				_ = obj.Body.Close()
				if err != nil {
					t.Error(err)
					return
				}
				if string(b) != bodies[0] && string(b) != bodies[1] || int64(len(b)) != obj.Info.Size {
					t.Errorf("read a mixed object of %d bytes (info size %d)", len(b), obj.Info.Size)
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no reads")
	}
}

func TestKeyConflicts(t *testing.T) {
	s := newTestStore(t, nil)
	ctx := context.Background()
	put(t, s, "a", "file")
	put(t, s, "d/x", "in dir")
	for _, key := range []string{"a/b", "a/", "a/b/c"} {
		_, err := s.Put(ctx, testBucket, key, strings.NewReader("x"), PutOptions{Size: -1})
		wantCode(t, err, CodeKeyConflict)
	}
	for _, o := range []PutOptions{{Size: -1}, {Size: -1, IfNoneMatch: "*"}} {
		_, err := s.Put(ctx, testBucket, "d", strings.NewReader("x"), o)
		wantCode(t, err, CodeKeyConflict)
	}
	// Delete of a "directory" key is a no-op; the objects stay.
	wantCode(t, s.Delete(ctx, testBucket, "d"), "")
	if got, _ := get(t, s, "d/x", GetOptions{}); got != "in dir" {
		t.Fatal("d/x damaged")
	}
}

func TestFolderMarkers(t *testing.T) {
	s := newTestStore(t, nil)
	ctx := context.Background()
	put(t, s, "warehouse/", "")
	put(t, s, "warehouse/ns/", "")
	put(t, s, "warehouse/ns/t", "x")
	if _, err := os.Stat(filepath.Join(s.Root(testBucket), "warehouse", dirMarker)); err != nil {
		t.Fatalf("marker file: %v", err)
	}
	if _, obj := get(t, s, "warehouse/", GetOptions{}); obj.Info.Key != "warehouse/" || obj.Info.Size != 0 {
		t.Fatalf("marker info %+v", obj.Info)
	}
	res, err := s.List(ctx, testBucket, ListOptions{})
	wantCode(t, err, "")
	if got := keysOf(res); strings.Join(got, ",") != "warehouse/,warehouse/ns/,warehouse/ns/t" {
		t.Fatalf("list = %v", got)
	}
	res, err = s.List(ctx, testBucket, ListOptions{Prefix: "warehouse/", Delimiter: "/"})
	wantCode(t, err, "")
	if got := keysOf(res); strings.Join(got, ",") != "warehouse/" || strings.Join(res.CommonPrefixes, ",") != "warehouse/ns/" {
		t.Fatalf("list = %v / %v", got, res.CommonPrefixes)
	}
	wantCode(t, s.Delete(ctx, testBucket, "warehouse/ns/t"), "")
	wantCode(t, s.Delete(ctx, testBucket, "warehouse/ns/"), "")
	if _, err := os.Stat(filepath.Join(s.Root(testBucket), "warehouse", "ns")); !os.IsNotExist(err) {
		t.Fatalf("empty dir not pruned: %v", err)
	}
	_, err = s.Put(ctx, testBucket, ".floe-dir", strings.NewReader(""), PutOptions{Size: -1})
	wantCode(t, err, CodeInvalidArgument)
}

func TestDeletePrunes(t *testing.T) {
	s := newTestStore(t, nil)
	ctx := context.Background()
	put(t, s, "a/b/c/d", "1")
	put(t, s, "a/x", "2")
	wantCode(t, s.Delete(ctx, testBucket, "a/b/c/d"), "")
	wantCode(t, s.Delete(ctx, testBucket, "a/b/c/d"), "") // missing: fine
	wantCode(t, s.Delete(ctx, testBucket, "nope/x"), "")
	root := s.Root(testBucket)
	if _, err := os.Stat(filepath.Join(root, "a", "b")); !os.IsNotExist(err) {
		t.Fatalf("a/b not pruned: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a", "x")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Delete(ctx, testBucket, "a/x"), "")
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("root removed: %v", err)
	}
	if des, _ := os.ReadDir(root); len(des) != 0 {
		t.Fatalf("root not empty: %v", des)
	}
}

// Concurrent puts and deletes under one directory never fail a put (the
// pruned directory is recreated).
func TestPutDeleteRace(t *testing.T) {
	s := newTestStore(t, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("p/q/w%d-%d", w, i)
				if _, err := s.Put(ctx, testBucket, key, strings.NewReader("x"), PutOptions{Size: -1}); err != nil {
					t.Error(err)
					return
				}
				if err := s.Delete(ctx, testBucket, key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestSymlinkEscape(t *testing.T) {
	s := newTestStore(t, nil)
	ctx := context.Background()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := s.Root(testBucket)
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "filelink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../..", filepath.Join(root, "rel")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"link/secret", "filelink", "rel/etc/passwd"} {
		_, err := s.Get(ctx, testBucket, key, GetOptions{})
		wantCode(t, err, CodeNoSuchKey)
		_, err = s.Head(ctx, testBucket, key, GetOptions{})
		wantCode(t, err, CodeNoSuchKey)
	}
	for _, key := range []string{"link/new", "link/sub/new", "rel/new"} {
		_, err := s.Put(ctx, testBucket, key, strings.NewReader("pwned"), PutOptions{Size: -1})
		wantCode(t, err, CodeInvalidArgument)
		_, err = s.Put(ctx, testBucket, key, strings.NewReader("pwned"), PutOptions{Size: -1, IfNoneMatch: "*"})
		wantCode(t, err, CodeInvalidArgument)
	}
	wantCode(t, s.Delete(ctx, testBucket, "link/secret"), "")
	if hits := grepTree(t, outside, []byte("pwned")); len(hits) > 0 {
		t.Fatalf("wrote outside the root: %v", hits)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("deleted outside the root: %v", err)
	}
	res, err := s.List(ctx, testBucket, ListOptions{})
	wantCode(t, err, "")
	if len(res.Objects) != 0 || len(res.CommonPrefixes) != 0 {
		t.Fatalf("listing shows symlinks: %+v", res)
	}
	// Overwriting a key whose file is a symlink replaces the link itself.
	put(t, s, "filelink", "mine")
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "secret" {
		t.Fatalf("symlink target overwritten: %q", b)
	}
}

func TestCopy(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(fmt.Sprintf("encrypted=%v", enc), func(t *testing.T) {
			var opt func(*Options)
			if enc {
				opt = withEncryption(t)
			}
			s := newTestStore(t, opt)
			ctx := context.Background()
			body := strings.Repeat("copy me ", 50000)
			src, err := s.Put(ctx, testBucket, "src", strings.NewReader(body), PutOptions{Size: -1, ContentType: "text/plain",
				UserMetadata: map[string]string{"a": "1"}})
			wantCode(t, err, "")
			dst, err := s.Copy(ctx, testBucket, "src", testBucket, "dir/dst", PutOptions{})
			wantCode(t, err, "")
			if dst.ETag != src.ETag || dst.ContentType != "text/plain" || dst.UserMetadata["a"] != "1" || dst.Size != src.Size {
				t.Fatalf("copy info = %+v; src %+v", dst, src)
			}
			if got, _ := get(t, s, "dir/dst", GetOptions{}); got != body {
				t.Fatal("copy content differs")
			}
			dst, err = s.Copy(ctx, testBucket, "src", testBucket, "src", PutOptions{UserMetadata: map[string]string{}})
			wantCode(t, err, "")
			if dst.ContentType != defaultContentType || len(dst.UserMetadata) != 0 || dst.ETag != src.ETag {
				t.Fatalf("replace-metadata copy info = %+v", dst)
			}
			_, err = s.CopyIf(ctx, testBucket, "src", GetOptions{IfNoneMatch: src.ETag}, testBucket, "x", PutOptions{})
			wantCode(t, err, CodePreconditionFailed)
			_, err = s.CopyIf(ctx, testBucket, "src", GetOptions{IfMatch: `"zz"`}, testBucket, "x", PutOptions{})
			wantCode(t, err, CodePreconditionFailed)
			_, err = s.Copy(ctx, testBucket, "nope", testBucket, "x", PutOptions{})
			wantCode(t, err, CodeNoSuchKey)
			_, err = s.Copy(ctx, testBucket, "src", testBucket, "dir/dst", PutOptions{IfNoneMatch: "*"})
			wantCode(t, err, CodePreconditionFailed)
		})
	}
}

// Files written by other programs (no xattr), or rewritten in place, get
// derived metadata.
func TestForeignFiles(t *testing.T) {
	s := newTestStore(t, nil)
	root := s.Root(testBucket)
	if err := os.MkdirAll(filepath.Join(root, "t", "data"), 0o750); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "t", "data", "f.parquet")
	if err := os.WriteFile(p, []byte("written by floe's engine"), 0o640); err != nil {
		t.Fatal(err)
	}
	got, obj := get(t, s, "t/data/f.parquet", GetOptions{})
	if got != "written by floe's engine" || obj.Info.ContentType != defaultContentType || len(obj.Info.ETag) != 34 || obj.Info.Encrypted {
		t.Fatalf("foreign file: %q %+v", got, obj.Info)
	}
	info := put(t, s, "k", "original")
	// Rewrite in place (same inode, xattr stays) with a different size.
	if err := os.WriteFile(filepath.Join(root, "k"), []byte("rewritten!"), 0o640); err != nil {
		t.Fatal(err)
	}
	got, obj = get(t, s, "k", GetOptions{})
	if got != "rewritten!" || obj.Info.ETag == info.ETag || obj.Info.Size != 10 {
		t.Fatalf("stale metadata used: %q %+v", got, obj.Info)
	}
}

// Without xattrs (simulated), objects still work with derived metadata.
func TestNoXattr(t *testing.T) {
	s := newTestStore(t, withEncryption(t))
	s.noXattr.Store(true)
	info := put(t, s, "k", "secret stuff")
	got, obj := get(t, s, "k", GetOptions{})
	if got != "secret stuff" || !obj.Info.Encrypted || obj.Info.ETag != info.ETag || obj.Info.Size != 12 || obj.Info.Size != info.Size {
		t.Fatalf("no-xattr object: %q %+v (put %+v)", got, obj.Info, info)
	}
}

func TestCrashLeftoversCleaned(t *testing.T) {
	dir := t.TempDir()
	o := Options{Buckets: map[string]string{testBucket: filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "stage")}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", "v")
	id, err := s.CreateMultipart(context.Background(), testBucket, "m", PutOptions{})
	wantCode(t, err, "")
	_ = s.Close()
	old := time.Now().Add(-2 * time.Hour)
	mk := func(p string, age time.Time) {
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(dir, "stage", stagingSub, "put-old"), old)
	mk(filepath.Join(dir, "stage", stagingSub, "put-new"), time.Now())
	half := filepath.Join(dir, "stage", uploadsSub, "0123456789abcdef0123456789abcdef")
	mk(filepath.Join(half, "upload.json.tmp"), old)
	if err := os.Chtimes(half, old, old); err != nil {
		t.Fatal(err)
	}
	s, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, want := range map[string]bool{
		filepath.Join(dir, "stage", stagingSub, "put-old"): false,
		filepath.Join(dir, "stage", stagingSub, "put-new"): true,
		half: false,
		filepath.Join(dir, "stage", uploadsSub, id): true,
	} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists = %v; want %v", p, err == nil, want)
		}
	}
	if got, _ := get(t, s, "k", GetOptions{}); got != "v" {
		t.Fatal("object lost")
	}
}

func TestNewOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"no buckets", Options{}, false},
		{"bad name", Options{Buckets: map[string]string{"Bad_Name": dir + "/x"}}, false},
		{"temp inside root", Options{Buckets: map[string]string{"abc": dir + "/r"}, TempDir: dir + "/r/tmp"}, false},
		{"temp inside root reserved", Options{Buckets: map[string]string{"abc": dir + "/r2"}, TempDir: dir + "/r2/.floe-staging"}, true},
		{"default temp", Options{Buckets: map[string]string{"abc": dir + "/r3", "abd": dir + "/r4"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.o)
			if (err == nil) != tt.ok {
				t.Fatalf("New: %v", err)
			}
			if s != nil {
				if got := s.Buckets(); len(got) != len(tt.o.Buckets) {
					t.Fatalf("Buckets() = %v", got)
				}
				_ = s.Close()
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".floe-staging", stagingSub)); err != nil {
		t.Fatalf("default temp dir: %v", err)
	}
}

func TestFileIO(t *testing.T) {
	s := newTestStore(t, withEncryption(t))
	fio := s.FileIO()
	ctx := context.Background()
	loc := "s3://data/wh/ns/t/metadata/00001.metadata.json"
	wantCode(t, fio.WriteFile(ctx, loc, []byte(`{"format-version":2}`)), "")
	b, err := fio.ReadFile(ctx, "s3a://data/wh/ns/t/metadata/00001.metadata.json")
	if err != nil || string(b) != `{"format-version":2}` {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if ok, err := fio.Exists(ctx, loc); !ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if info, _ := s.Head(ctx, "data", "wh/ns/t/metadata/00001.metadata.json", GetOptions{}); info.ContentType != "application/json" || !info.Encrypted {
		t.Fatalf("info = %+v", info)
	}
	_, err = fio.ReadFile(ctx, "s3://data/wh/missing.json")
	if floe.KindOf(err) != floe.NotFound || !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("missing: %v (kind %v)", err, floe.KindOf(err))
	}
	if ok, err := fio.Exists(ctx, "s3://data/wh/missing.json"); ok || err != nil {
		t.Fatalf("Exists(missing) = %v, %v", ok, err)
	}
	for _, bad := range []string{"file:///etc/passwd", "s3://", "s3://data", "s3://data/../x", "s3://nobucket/x"} {
		if _, err := fio.ReadFile(ctx, bad); err == nil || floe.KindOf(err) == floe.Internal {
			t.Fatalf("ReadFile(%q) = %v (kind %v)", bad, err, floe.KindOf(err))
		}
	}
	wantCode(t, fio.WriteFile(ctx, "s3://data/wh/ns/t2/x", []byte("keep")), "")
	wantCode(t, fio.DeletePrefix(ctx, "s3://data/wh/ns/t"), "")
	if ok, _ := fio.Exists(ctx, loc); ok {
		t.Fatal("DeletePrefix left the file")
	}
	if ok, _ := fio.Exists(ctx, "s3://data/wh/ns/t2/x"); !ok {
		t.Fatal("DeletePrefix removed a sibling with a longer name")
	}
	if err := fio.DeletePrefix(ctx, "s3://data/"); floe.KindOf(err) != floe.Forbidden {
		t.Fatalf("DeletePrefix(root) = %v", err)
	}
	wantCode(t, fio.Delete(ctx, "s3://data/wh/ns/t2/x"), "")
	wantCode(t, fio.Delete(ctx, "s3://data/wh/ns/t2/x"), "")
	if des, _ := os.ReadDir(s.Root(testBucket)); len(des) != 0 {
		t.Fatalf("root not empty after deletes: %v", des)
	}
}

// With encryption on, no plaintext reaches the disk: objects, staging
// files, multipart parts (complete or not), copies.
func TestEncryptionAtRest(t *testing.T) {
	dir := t.TempDir()
	s := newTestStore(t, func(o *Options) {
		withEncryption(t)(o)
		o.Buckets = map[string]string{testBucket: filepath.Join(dir, "wh")}
		o.TempDir = filepath.Join(dir, "staging")
	})
	ctx := context.Background()
	marker := "PLAINTEXT-MARKER-8c1f"
	body := strings.Repeat(marker, 10000)
	put(t, s, "a/obj", body)
	if _, err := s.Copy(ctx, testBucket, "a/obj", testBucket, "a/copy", PutOptions{}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.FileIO().WriteFile(ctx, "s3://data/meta.json", []byte(marker)), "")
	id, err := s.CreateMultipart(ctx, testBucket, "a/mp", PutOptions{})
	wantCode(t, err, "")
	etag, err := s.UploadPart(ctx, testBucket, "a/mp", id, 1, strings.NewReader(body), -1, nil)
	wantCode(t, err, "")
	id2, err := s.CreateMultipart(ctx, testBucket, "a/pending", PutOptions{})
	wantCode(t, err, "")
	if _, err := s.UploadPart(ctx, testBucket, "a/pending", id2, 1, strings.NewReader(body), -1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteMultipart(ctx, testBucket, "a/mp", id, []CompletedPart{{1, etag}}, PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if hits := grepTree(t, dir, []byte(marker)); len(hits) > 0 {
		t.Fatalf("plaintext on disk: %v", hits)
	}
	for _, k := range []string{"a/obj", "a/copy", "a/mp"} {
		got, obj := get(t, s, k, GetOptions{})
		if got != body || !obj.Info.Encrypted || obj.Info.Size != int64(len(body)) {
			t.Fatalf("%s: wrong content or info %+v", k, obj.Info)
		}
		r, _ := get(t, s, k, GetOptions{Range: "bytes=65530-65560"})
		if r != body[65530:65561] {
			t.Fatalf("%s: range wrong", k)
		}
	}
	// A store without the key cannot read encrypted objects (internal
	// error, not a client error), but lists them with their plaintext size.
	s2, err := New(Options{Buckets: map[string]string{testBucket: filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Get(ctx, testBucket, "a/obj", GetOptions{}); err == nil || CodeOf(err) != "" {
		t.Fatalf("Get without key: %v", err)
	}
	res, err := s2.List(ctx, testBucket, ListOptions{Prefix: "a/"})
	wantCode(t, err, "")
	if len(res.Objects) != 3 || res.Objects[0].Size != int64(len(body)) || !res.Objects[0].Encrypted {
		t.Fatalf("list = %+v", res.Objects)
	}
}

// A cancelled upload fails and leaves neither an object nor staging files.
func TestPutCancelled(t *testing.T) {
	s := newTestStore(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	body := io.MultiReader(strings.NewReader(strings.Repeat("x", 1<<20)), readerFunc(func(p []byte) (int, error) {
		cancel()
		return copy(p, "more"), nil
	}), strings.NewReader(strings.Repeat("y", 1<<20)))
	_, err := s.Put(ctx, testBucket, "k", body, PutOptions{Size: -1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put = %v; want context.Canceled", err)
	}
	_, err = s.Head(context.Background(), testBucket, "k", GetOptions{})
	wantCode(t, err, CodeNoSuchKey)
	if des, _ := os.ReadDir(filepath.Join(s.tempDir, stagingSub)); len(des) != 0 {
		t.Fatalf("staging not empty: %v", des)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
