package subset_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/subset"
	"github.com/floe-lake/floe/objstore/bucket"
)

func newFS(t *testing.T) *lake.BucketFS {
	t.Helper()
	dir := t.TempDir()
	objs, err := bucket.New(bucket.Options{Buckets: map[string]string{"lake": filepath.Join(dir, "lake")}, TempDir: filepath.Join(dir, "staging")})
	if err != nil {
		t.Fatal(err)
	}
	return lake.NewBucketFS(objs)
}

// writeView writes a view directory whose one manifest names files data
// files (and one of another bucket, which no key of "lake" can match).
func writeView(t *testing.T, fsys *lake.BucketFS, dir string, files int) {
	t.Helper()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(2, &buf, *iceberg.UnpartitionedSpec, sc, 7)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"s3://elsewhere/t/data/x.parquet"}
	for i := range files {
		paths = append(paths, fmt.Sprintf("s3://lake/t/data/f-%d.parquet", i))
	}
	seq := int64(1)
	snap := int64(7)
	for _, p := range paths {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, p, iceberg.ParquetFile, nil, nil, nil, 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Existing(iceberg.NewManifestEntry(iceberg.EntryStatusEXISTING, &snap, &seq, &seq, b.Build())); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mf, err := w.ToManifestFile(dir+"m0-0.avro", int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile(dir+"m0-0.avro", buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	var list bytes.Buffer
	if err := iceberg.WriteManifestList(2, &list, 7, nil, &seq, 0, []iceberg.ManifestFile{mf}); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile(dir+subset.ListName, list.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// TestKeys: a view names exactly its manifests' files of the bucket; the
// cache holds at most its bound of keys, forgetting the least recently
// used view; a view larger than the bound is refused, never half-read.
func TestKeys(t *testing.T) {
	ctx := context.Background()
	fsys := newFS(t)
	for i := range 3 {
		writeView(t, fsys, fmt.Sprintf("s3://lake/t/metadata/floe-share-7-v%d/", i), 10)
	}
	writeView(t, fsys, "s3://lake/t/metadata/floe-share-7-big/", 30)
	k := subset.NewKeys(fsys, 25)
	tests := []struct {
		dir, key string
		want     bool
	}{
		{"t/metadata/floe-share-7-v0/", "t/data/f-3.parquet", true},
		{"t/metadata/floe-share-7-v0/", "t/data/f-10.parquet", false},
		{"t/metadata/floe-share-7-v0/", "t/data/x.parquet", false}, // the other bucket's file
		{"t/metadata/floe-share-7-v1/", "t/data/f-9.parquet", true},
		{"t/metadata/floe-share-7-none/", "t/data/f-1.parquet", false}, // no such view
	}
	for _, tt := range tests {
		got, err := k.Contains(ctx, "lake", tt.dir, tt.key)
		if err != nil || got != tt.want {
			t.Errorf("Contains(%s, %s) = %v, %v; want %v", tt.dir, tt.key, got, err, tt.want)
		}
	}
	if n := k.Len(); n != 22 {
		t.Fatalf("cache size %d, want 22 (two views of 10 keys)", n)
	}
	// A third view: the least recently used (v0) goes.
	if ok, err := k.Contains(ctx, "lake", "t/metadata/floe-share-7-v2/", "t/data/f-0.parquet"); !ok || err != nil {
		t.Fatalf("v2: %v %v", ok, err)
	}
	if n := k.Len(); n > 25 {
		t.Fatalf("cached %d keys, above the bound 25", n)
	}
	// Still right after the eviction (read again).
	if ok, err := k.Contains(ctx, "lake", "t/metadata/floe-share-7-v0/", "t/data/f-3.parquet"); !ok || err != nil {
		t.Fatalf("v0 again: %v %v", ok, err)
	}
	if n := k.Len(); n > 25 {
		t.Fatalf("cached %d keys, above the bound 25", n)
	}
	if ok, err := k.Contains(ctx, "lake", "t/metadata/floe-share-7-big/", "t/data/f-0.parquet"); ok || !errors.Is(err, subset.ErrTooLarge) {
		t.Fatalf("a view above the bound: %v %v", ok, err)
	}
	if _, err := k.Contains(ctx, "lake", "t/metadata/floe-share-7-v0", "t/data/f-0.parquet"); err == nil {
		t.Fatal("a directory without its slash was accepted")
	}
}

// TestKeysRefuseForeignManifests: a list naming a manifest outside its view
// directory names nothing (a view is self-contained).
func TestKeysRefuseForeignManifests(t *testing.T) {
	ctx := context.Background()
	fsys := newFS(t)
	writeView(t, fsys, "s3://lake/t/metadata/floe-share-7-a/", 3)
	list, err := fsys.ReadFile("s3://lake/t/metadata/floe-share-7-a/" + subset.ListName)
	if err != nil {
		t.Fatal(err)
	}
	// The same list copied into another directory points at a's manifest.
	if err := fsys.WriteFile("s3://lake/t/metadata/floe-share-7-b/"+subset.ListName, list); err != nil {
		t.Fatal(err)
	}
	k := subset.NewKeys(fsys, 0)
	if ok, err := k.Contains(ctx, "lake", "t/metadata/floe-share-7-b/", "t/data/f-0.parquet"); ok || err == nil {
		t.Fatalf("a foreign manifest was followed: %v %v", ok, err)
	}
}

func TestSnapshotOf(t *testing.T) {
	for _, tt := range []struct {
		loc  string
		id   int64
		isIn bool
	}{
		{"s3://lake/t/metadata/floe-share-42-0a1b/list.avro", 42, true},
		{"s3://lake/t/metadata/floe-share-42-0a1b/", 42, true},
		{"s3://lake/t/metadata/floe-share--1-0a1b/x.metadata.json", 0, false},
		{"s3://lake/t/metadata/floe-share-42-0a1b", 0, false},
		{"s3://lake/t/metadata/floe-share-x-0a1b/list.avro", 0, false},
		{"s3://lake/t/metadata/snap-42.avro", 0, false},
		{"s3://lake/t/data/floe-share-42-0a1b/f.parquet", 0, false},
	} {
		id, ok := subset.SnapshotOf(tt.loc)
		if ok != tt.isIn || id != tt.id {
			t.Errorf("SnapshotOf(%s) = %d, %v; want %d, %v", tt.loc, id, ok, tt.id, tt.isIn)
		}
	}
	a := subset.Dir("s3://lake/t", 5, "s3://lake/t/metadata/snap-5.avro", "")
	if b := subset.Dir("s3://lake/t/", 5, "s3://lake/t/metadata/snap-5.avro", ""); a != b {
		t.Fatalf("Dir is not deterministic: %s %s", a, b)
	}
	if b := subset.Dir("s3://lake/t", 5, "s3://lake/t/metadata/snap-5.avro", "region = 'x'"); a == b {
		t.Fatal("two filters share a view directory")
	}
	if id, ok := subset.SnapshotOf(a + subset.ListName); !ok || id != 5 {
		t.Fatalf("SnapshotOf(Dir(...)) = %d %v", id, ok)
	}
}
