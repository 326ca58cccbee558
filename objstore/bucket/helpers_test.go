package bucket

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/objstore/sse"
)

const testBucket = "data"

// newTestStore opens a store with bucket "data" in a temp dir; opt may
// adjust the options.
func newTestStore(t testing.TB, opt func(*Options)) *Store {
	t.Helper()
	dir := t.TempDir()
	o := Options{Buckets: map[string]string{testBucket: filepath.Join(dir, "wh")}, MinPartSize: 1 << 10}
	if opt != nil {
		opt(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// withEncryption turns on encryption with a fresh key.
func withEncryption(t testing.TB) func(*Options) {
	t.Helper()
	key, err := sse.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	kr, err := sse.ParseKeyring([]byte("k1 " + key + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) { o.Encryption = kr }
}

func put(t testing.TB, s *Store, key, body string) ObjectInfo {
	t.Helper()
	info, err := s.Put(context.Background(), testBucket, key, strings.NewReader(body), PutOptions{Size: -1})
	if err != nil {
		t.Fatalf("Put %q: %v", key, err)
	}
	return info
}

func get(t testing.TB, s *Store, key string, o GetOptions) (string, *Object) {
	t.Helper()
	obj, err := s.Get(context.Background(), testBucket, key, o)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	defer obj.Body.Close()
	b, err := io.ReadAll(obj.Body)
	if err != nil {
		t.Fatalf("Get %q: read: %v", key, err)
	}
	return string(b), obj
}

// wantCode fails unless err carries the S3 code (code "" = no error).
func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v; want *Error %s", err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s (%v); want %s", e.Code, err, code)
	}
	if e.Status == 0 || e.Status == 500 {
		t.Fatalf("status of %s = %d", e.Code, e.Status)
	}
}

// grepTree reports the files under dir whose content contains needle.
func grepTree(t testing.TB, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}
