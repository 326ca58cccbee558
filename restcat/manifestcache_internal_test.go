package restcat

import (
	"bytes"
	"io"
	"io/fs"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
)

// countingIO serves files from a map and counts the reads of each.
type countingIO struct {
	files map[string][]byte
	reads map[string]int
}

func (c *countingIO) Open(name string) (icebergio.File, error) {
	b, ok := c.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	c.reads[name]++
	return &memFile{Reader: bytes.NewReader(b), name: name, size: int64(len(b))}, nil
}

func (c *countingIO) Remove(string) error { return nil }

func TestManifestCacheBound(t *testing.T) {
	under := &countingIO{reads: map[string]int{}, files: map[string][]byte{
		"s3://w/t/metadata/a.avro":           bytes.Repeat([]byte("a"), 400),
		"s3://w/t/metadata/b.avro":           bytes.Repeat([]byte("b"), 400),
		"s3://w/t/metadata/c.avro":           bytes.Repeat([]byte("c"), 400),
		"s3://w/t/metadata/v1.metadata.json": []byte("{}"),
	}}
	// Room for two 400-byte files (each counted with its name and 64 bytes).
	c := newManifestCache(under, 1100, nil)
	read := func(name string) {
		t.Helper()
		f, err := c.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		if err != nil || !bytes.Equal(b, under.files[name]) {
			t.Fatalf("%s: %v, %d bytes", name, err, len(b))
		}
	}
	for _, name := range []string{"a", "b", "a", "b"} {
		read("s3://w/t/metadata/" + name + ".avro")
	}
	if under.reads["s3://w/t/metadata/a.avro"] != 1 || under.reads["s3://w/t/metadata/b.avro"] != 1 {
		t.Fatalf("cached files read again: %v", under.reads)
	}
	// A third file evicts the least recently used (a); the bound holds.
	read("s3://w/t/metadata/c.avro")
	if n, size := c.files.Len(); n != 2 || size > 1100 {
		t.Errorf("%d files, %d bytes: over the bound", n, size)
	}
	if c.files.evictions != 1 {
		t.Errorf("%d evictions, want 1", c.files.evictions)
	}
	read("s3://w/t/metadata/b.avro")
	read("s3://w/t/metadata/a.avro")
	if under.reads["s3://w/t/metadata/b.avro"] != 1 || under.reads["s3://w/t/metadata/a.avro"] != 2 {
		t.Errorf("reads %v: b should be cached, a evicted", under.reads)
	}
	// Only Avro files (manifests and manifest lists) are kept.
	read("s3://w/t/metadata/v1.metadata.json")
	read("s3://w/t/metadata/v1.metadata.json")
	if under.reads["s3://w/t/metadata/v1.metadata.json"] != 2 {
		t.Errorf("metadata.json cached")
	}
	if _, err := c.Open("s3://w/t/metadata/missing.avro"); err == nil {
		t.Error("a missing file opened")
	}
}
