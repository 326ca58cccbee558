package engine

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table/dv"
)

// serializeDV returns the deletion-vector-v1 blob of positions.
func serializeDV(t testing.TB, positions ...uint64) []byte {
	t.Helper()
	bm := dv.NewRoaringPositionBitmap()
	for _, p := range positions {
		bm.Set(p)
	}
	b, err := dv.SerializeDV(bm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeDV(t *testing.T) {
	good := serializeDV(t, 0, 5, 9)
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-6] ^= 0xff // a bitmap byte: the CRC no longer matches
	for _, c := range []struct {
		name              string
		blob              []byte
		cardinality, rows int64
		want              []uint64
		err               string
	}{
		{"ok", good, 3, 10, []uint64{0, 5, 9}, ""},
		{"position past the file's end", good, 3, 9, nil, "position 9 of a data file of 9 rows"},
		{"wrong cardinality", good, 2, 10, nil, "cardinality"},
		{"more deleted than rows", good, 11, 10, nil, "deletes 11 of 10 rows"},
		{"corrupt", corrupt, 3, 10, nil, "CRC"},
		{"truncated", good[:len(good)-3], 3, 10, nil, "length"},
		{"empty", nil, 0, 10, nil, "too short"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bm, err := decodeDV(c.blob, c.cardinality, c.rows)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for p := range bm.Positions() {
				got = append(got, p)
			}
			if len(got) != len(c.want) {
				t.Fatalf("positions %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("positions %v, want %v", got, c.want)
				}
			}
		})
	}
}

// FuzzDecodeDV: a blob from the warehouse (any engine's, or a hostile
// writer's) never panics the decoder, and what decodes never deletes past
// the data file's end nor more rows than the manifest says.
func FuzzDecodeDV(f *testing.F) {
	f.Add(serializeDV(f, 0, 5, 9), int64(3), int64(10))
	f.Add(serializeDV(f, 1<<33, 7), int64(2), int64(1<<34))
	f.Add([]byte{0, 0, 0, 4, 0xd1, 0xd3, 0x39, 0x64, 0, 0, 0, 0}, int64(0), int64(1))
	f.Fuzz(func(t *testing.T, blob []byte, cardinality, rows int64) {
		bm, err := decodeDV(blob, cardinality, rows)
		if err != nil {
			return
		}
		if bm.Cardinality() != cardinality {
			t.Fatalf("cardinality %d, manifest says %d", bm.Cardinality(), cardinality)
		}
		for p := range bm.Positions() {
			if p >= uint64(rows) {
				t.Fatalf("position %d of %d rows", p, rows)
			}
		}
	})
}

// fileSource is an ObjectSource over local files, copied like remote ones.
type fileSource struct{ dir string }

func (fileSource) LocalPath(context.Context, string) (string, bool, error) { return "", false, nil }
func (s fileSource) Open(_ context.Context, location string) (io.ReadCloser, int64, error) {
	f, err := os.Open(filepath.Join(s.dir, location))
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}
func (fileSource) Dirs() []string { return nil }

// TestReadRangeBounds: a deletion vector's blob is read only within its
// bound and the object's end, whatever the manifest claims.
func TestReadRangeBounds(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dv.puffin"), []byte("PFA1-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newFileCache(fileSource{dir}, 1<<20, 8)
	defer c.close()
	got, err := c.readRange(t.Context(), "dv.puffin", 5, 4)
	if err != nil || string(got) != "0123" {
		t.Fatalf("readRange = %q, %v", got, err)
	}
	for _, r := range [][2]int64{{0, maxDVBlobBytes + 1}, {-1, 4}, {0, 0}, {10, 10}} {
		if _, err := c.readRange(t.Context(), "dv.puffin", r[0], r[1]); err == nil {
			t.Errorf("readRange(%d, %d) read past its bounds", r[0], r[1])
		}
	}
}

// TestDVPathCached: the position files made from deletion vectors live in
// the file cache under its bounds (here one file: a second vector's file
// evicts the first's), and a vector that names another data file than the
// one it is applied to is refused.
func TestDVPathCached(t *testing.T) {
	dir := t.TempDir()
	blob := serializeDV(t, 1, 3)
	if err := os.WriteFile(filepath.Join(dir, "d.puffin"), append([]byte("PFA1"), blob...), 0o600); err != nil {
		t.Fatal(err)
	}
	vector := func(ref string) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, "d.puffin", iceberg.PuffinFile,
			nil, nil, nil, 2, int64(4+len(blob)))
		if err != nil {
			t.Fatal(err)
		}
		return b.ReferencedDataFile(ref).ContentOffset(4).ContentSizeInBytes(int64(len(blob))).Build()
	}
	c := newFileCache(fileSource{dir}, 1<<20, 1)
	defer c.close()
	for _, data := range []string{"a.parquet", "a.parquet", "b.parquet"} {
		ps := &pinSet{c: c}
		p, err := c.dvPath(t.Context(), vector(data), data, 10, ps)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
		ps.release()
		if _, n := c.stats(); n != 1 {
			t.Fatalf("%d cached files, bound 1", n)
		}
	}
	if _, err := c.dvPath(t.Context(), vector("a.parquet"), "b.parquet", 10, &pinSet{c: c}); err == nil {
		t.Fatal("a vector of another data file was applied")
	}
}
