package ocfscan_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/internal/ocfscan"
)

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String},
)

// specs: unpartitioned, and partitioned by identity(region), so that the
// manifests' writer schemas differ (the partition struct is part of them).
func specs() map[string]iceberg.PartitionSpec {
	return map[string]iceberg.PartitionSpec{
		"unpartitioned": *iceberg.UnpartitionedSpec,
		"by-region": iceberg.NewPartitionSpecID(1, iceberg.PartitionField{
			SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}}),
	}
}

type fileSpec struct {
	path    string
	content iceberg.ManifestEntryContent
	status  iceberg.ManifestEntryStatus
}

// writeManifest writes a manifest with iceberg-go.
func writeManifest(t testing.TB, version int, spec iceberg.PartitionSpec, files []fileSpec) []byte {
	t.Helper()
	snap := int64(7)
	var entries []iceberg.ManifestEntry
	for _, f := range files {
		part := map[int]any{}
		if spec.NumFields() > 0 {
			part[1000] = "eu"
		}
		b, err := iceberg.NewDataFileBuilder(spec, f.content, f.path, iceberg.ParquetFile, part, nil, nil, 10, 1024)
		if err != nil {
			t.Fatal(err)
		}
		if f.content == iceberg.EntryContentEqDeletes {
			b = b.EqualityFieldIDs([]int{1})
		}
		seq := int64(3)
		entries = append(entries, iceberg.NewManifestEntry(f.status, &snap, &seq, &seq, b.Build()))
	}
	var opts []iceberg.ManifestWriterOption
	if len(files) > 0 && files[0].content != iceberg.EntryContentData {
		opts = append(opts, iceberg.WithManifestWriterContent(iceberg.ManifestContentDeletes))
	}
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(version, &buf, spec, testSchema, snap, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := w.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeList writes a manifest list of the given manifest paths with
// iceberg-go.
func writeList(t testing.TB, version int, paths []string) []byte {
	t.Helper()
	var files []iceberg.ManifestFile
	for _, p := range paths {
		files = append(files, iceberg.NewManifestFile(version, p, 100, 0, 7).AddedFiles(1).Build())
	}
	var buf bytes.Buffer
	seq, parent := int64(3), int64(6)
	if err := iceberg.WriteManifestList(version, &buf, 7, &parent, &seq, 0, files); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestManifestPaths(t *testing.T) {
	for _, version := range []int{1, 2, 3} {
		for _, n := range []int{0, 1, 3, 500} {
			t.Run(fmt.Sprintf("v%d/%d", version, n), func(t *testing.T) {
				var want []string
				for i := range n {
					want = append(want, fmt.Sprintf("s3://b/t/metadata/%05d-m.avro", i))
				}
				raw := writeList(t, version, want)
				got, err := ocfscan.New(0).ManifestPaths(raw)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("got %d paths %q, want %d", len(got), got, len(want))
				}
				// The full reader agrees.
				full, err := iceberg.ReadManifestList(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				if len(full) != len(got) {
					t.Fatalf("iceberg-go read %d entries, scan %d", len(full), len(got))
				}
			})
		}
	}
}

func TestEntryPaths(t *testing.T) {
	data := []fileSpec{
		{"s3://b/t/data/a.parquet", iceberg.EntryContentData, iceberg.EntryStatusADDED},
		{"s3://b/t/data/b.parquet", iceberg.EntryContentData, iceberg.EntryStatusEXISTING},
		{"s3://b/t/data/gone.parquet", iceberg.EntryContentData, iceberg.EntryStatusDELETED},
	}
	deletes := []fileSpec{
		{"s3://b/t/data/pos-deletes.parquet", iceberg.EntryContentPosDeletes, iceberg.EntryStatusADDED},
		{"s3://b/t/data/eq-deletes.parquet", iceberg.EntryContentEqDeletes, iceberg.EntryStatusADDED},
		{"s3://b/t/data/old-deletes.parquet", iceberg.EntryContentPosDeletes, iceberg.EntryStatusDELETED},
	}
	sc := ocfscan.New(0)
	for name, spec := range specs() {
		for _, c := range []struct {
			version int
			files   []fileSpec
		}{{1, data}, {2, data}, {2, deletes}, {3, data}, {3, deletes}} {
			t.Run(fmt.Sprintf("%s/v%d/%s", name, c.version, c.files[0].path), func(t *testing.T) {
				version, in := c.version, c.files
				raw := writeManifest(t, version, spec, in)
				type got struct {
					path    string
					content int32
				}
				var out []got
				if err := sc.EntryPaths(raw, func(p string, c int32) error {
					out = append(out, got{p, c})
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if len(out) != len(in) {
					t.Fatalf("got %d entries, want %d: %v", len(out), len(in), out)
				}
				for i, f := range in {
					if out[i].path != f.path || out[i].content != int32(f.content) {
						t.Errorf("entry %d: got %v, want %s content %d", i, out[i], f.path, f.content)
					}
				}
			})
		}
	}
}

func TestEntryPathsStopsOnCallbackError(t *testing.T) {
	raw := writeManifest(t, 2, *iceberg.UnpartitionedSpec, []fileSpec{
		{"s3://b/t/data/a.parquet", iceberg.EntryContentData, iceberg.EntryStatusADDED},
		{"s3://b/t/data/b.parquet", iceberg.EntryContentData, iceberg.EntryStatusADDED},
	})
	stop := errors.New("stop")
	calls := 0
	err := ocfscan.New(0).EntryPaths(raw, func(string, int32) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err %v after %d calls, want stop after 1", err, calls)
	}
}

func TestMalformed(t *testing.T) {
	good := writeList(t, 2, []string{"s3://b/t/metadata/m1.avro", "s3://b/t/metadata/m2.avro"})
	manifest := writeManifest(t, 2, *iceberg.UnpartitionedSpec, []fileSpec{
		{"s3://b/t/data/a.parquet", iceberg.EntryContentData, iceberg.EntryStatusADDED}})
	cases := map[string][]byte{
		"empty":          {},
		"no magic":       []byte("PAR1xxxx"),
		"truncated":      good[:len(good)-5],
		"header only":    good[:40],
		"bad sync":       append(append([]byte{}, good[:len(good)-16]...), make([]byte, 16)...),
		"trailing bytes": append(append([]byte{}, good...), 0x02),
		// A manifest is not a manifest list: its schema has no manifest_path.
		"manifest as list": manifest,
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ocfscan.New(0).ManifestPaths(raw)
			if !errors.Is(err, ocfscan.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
	t.Run("list as manifest", func(t *testing.T) {
		err := ocfscan.New(0).EntryPaths(good, func(string, int32) error { return nil })
		if !errors.Is(err, ocfscan.ErrMalformed) {
			t.Fatalf("err = %v, want ErrMalformed", err)
		}
	})
}

// TestSchemaCacheBounded fills the cache past its bound with manifests of
// distinct writer schemas (one partition field name each) and checks that
// it holds no more than the bound and still reads every file.
func TestSchemaCacheBounded(t *testing.T) {
	const bound = 4
	sc := ocfscan.New(bound)
	for i := range 3 * bound {
		spec := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{
			SourceIDs: []int{2}, FieldID: 1000, Name: fmt.Sprintf("region_%d", i), Transform: iceberg.IdentityTransform{}})
		path := fmt.Sprintf("s3://b/t/data/%d.parquet", i)
		raw := writeManifest(t, 2, spec, []fileSpec{{path, iceberg.EntryContentData, iceberg.EntryStatusADDED}})
		var got string
		if err := sc.EntryPaths(raw, func(p string, _ int32) error { got = p; return nil }); err != nil {
			t.Fatal(err)
		}
		if got != path {
			t.Fatalf("got %q, want %q", got, path)
		}
		if n := sc.CachedSchemas(); n > bound {
			t.Fatalf("cache holds %d schemas, bound %d", n, bound)
		}
	}
	if n := sc.CachedSchemas(); n != bound {
		t.Fatalf("cache holds %d schemas after %d distinct ones, want the bound %d", n, 3*bound, bound)
	}
}

func FuzzScan(f *testing.F) {
	f.Add(writeList(f, 2, []string{"s3://b/t/metadata/m1.avro"}))
	f.Add(writeList(f, 1, []string{"s3://b/t/metadata/m1.avro", "s3://b/t/metadata/m2.avro"}))
	f.Add(writeManifest(f, 2, *iceberg.UnpartitionedSpec, []fileSpec{
		{"s3://b/t/data/a.parquet", iceberg.EntryContentData, iceberg.EntryStatusADDED}}))
	f.Add([]byte("Obj\x01"))
	sc := ocfscan.New(8)
	f.Fuzz(func(t *testing.T, raw []byte) {
		paths, err := sc.ManifestPaths(raw)
		if err == nil && len(paths) > len(raw) {
			t.Fatalf("%d paths from %d bytes", len(paths), len(raw))
		}
		n := 0
		err = sc.EntryPaths(raw, func(string, int32) error { n++; return nil })
		if err == nil && n > len(raw) {
			t.Fatalf("%d entries from %d bytes", n, len(raw))
		}
	})
}

// BenchmarkScan compares the path scan with iceberg-go's full readers on a
// manifest list of 300 manifests and a manifest of 100 files.
func BenchmarkScan(b *testing.B) {
	var paths []string
	for i := range 300 {
		paths = append(paths, fmt.Sprintf("s3://b/t/metadata/%05d-m.avro", i))
	}
	list := writeList(b, 2, paths)
	var files []fileSpec
	for i := range 100 {
		files = append(files, fileSpec{fmt.Sprintf("s3://b/t/data/%05d.parquet", i), iceberg.EntryContentData, iceberg.EntryStatusADDED})
	}
	spec := specs()["by-region"]
	manifest := writeManifest(b, 2, spec, files)
	mf := iceberg.NewManifestFile(2, "s3://b/t/metadata/m.avro", int64(len(manifest)), int32(spec.ID()), 7).Build()
	sc := ocfscan.New(0)
	b.Run("list/scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := sc.ManifestPaths(list); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list/iceberg-go", func(b *testing.B) {
		for b.Loop() {
			if _, err := iceberg.ReadManifestList(bytes.NewReader(list)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("manifest/scan", func(b *testing.B) {
		for b.Loop() {
			if err := sc.EntryPaths(manifest, func(string, int32) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("manifest/iceberg-go", func(b *testing.B) {
		for b.Loop() {
			if _, err := iceberg.ReadManifest(mf, bytes.NewReader(manifest), false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
