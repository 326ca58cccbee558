package engine

import (
	"context"
	"database/sql/driver"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/duckdb/duckdb-go/v2"
)

// writeParquet writes a Parquet file with DuckDB: the select list of a
// one-row query, with the given field ids (empty: none).
func writeParquet(t *testing.T, path, selectList, fieldIDs string) {
	t.Helper()
	db, err := duckdb.NewConnector("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := "FORMAT parquet"
	if fieldIDs != "" {
		opts += ", FIELD_IDS {" + fieldIDs + "}"
	}
	if _, err := c.(*duckdb.Conn).ExecContext(context.Background(), "COPY (SELECT "+selectList+") TO "+sqlString(path)+" ("+opts+")", []driver.NamedValue{}); err != nil {
		t.Fatal(err)
	}
}

func TestReadFields(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.parquet")
	writeParquet(t, ok, "1::BIGINT AS id, 'a' AS name, 'x'::BLOB AS raw", "id: 1, name: 2, raw: 7")
	noIDs := filepath.Join(dir, "noids.parquet")
	writeParquet(t, noIDs, "1::BIGINT AS id", "")
	junk := filepath.Join(dir, "junk.parquet")
	if err := os.WriteFile(junk, []byte("PAR1 not really PAR1"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want []fileField
	}{
		{ok, []fileField{{1, "id", false}, {2, "name", true}, {7, "raw", false}}},
		{noIDs, nil},
		{junk, nil},
		{filepath.Join(dir, "missing.parquet"), nil},
	} {
		if got := readFields(c.path); !slices.Equal(got, c.want) {
			t.Errorf("readFields(%s) = %v, want %v", filepath.Base(c.path), got, c.want)
		}
	}
}

// TestReadableByName: data files are read by column name only when every
// file has exactly the table's columns under the same field ids and names.
func TestReadableByName(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{ // name -> select list, field ids
		"same":      "1::BIGINT AS id, 'a' AS name",
		"reordered": "'a' AS name, 1::BIGINT AS id",
		"narrower":  "1::INTEGER AS id, 'a' AS name",
		"renamed":   "1::BIGINT AS id, 'a' AS old_name",
		"swapped":   "1::BIGINT AS name, 'a' AS id",
		"extra":     "1::BIGINT AS id, 'a' AS name, 2 AS dropped",
		"missing":   "1::BIGINT AS id",
		"blob":      "1::BIGINT AS id, 'a'::BLOB AS name",
	}
	ids := map[string]string{
		"swapped": "name: 1, id: 2",
		"renamed": "id: 1, old_name: 2",
		"extra":   "id: 1, name: 2, dropped: 3",
		"missing": "id: 1",
	}
	for name, sel := range files {
		id := ids[name]
		if id == "" {
			id = "id: 1, name: 2"
		}
		writeParquet(t, filepath.Join(dir, name+".parquet"), sel, id)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
	nested := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String}})
	e := &Engine{files: newFileCache(IOSource{}, 1, DefaultCacheFiles)}
	tasksOf := func(names ...string) ([]table.FileScanTask, map[string]string) {
		var tasks []table.FileScanTask
		pathOf := map[string]string{}
		for _, n := range names {
			loc := "s3://wh/t/data/" + n + ".parquet"
			b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, loc, iceberg.ParquetFile, nil, nil, nil, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, table.FileScanTask{File: b.Build()})
			pathOf[loc] = filepath.Join(dir, n+".parquet")
		}
		return tasks, pathOf
	}
	for _, c := range []struct {
		schema *iceberg.Schema
		files  []string
		want   bool
	}{
		{schema, []string{"same"}, true},
		{schema, []string{"same", "reordered", "narrower"}, true},
		{schema, []string{"same", "renamed"}, false},
		{schema, []string{"swapped"}, false},
		{schema, []string{"extra"}, false},
		{schema, []string{"same", "missing"}, false},
		{schema, []string{"blob"}, false},
		{nested, []string{"same"}, false},
	} {
		cols, err := columnsOf(c.schema)
		if err != nil {
			t.Fatal(err)
		}
		tasks, pathOf := tasksOf(c.files...)
		if got := e.readableByName(t.Context(), c.schema, cols, tasks, pathOf); got != c.want {
			t.Errorf("readableByName(%v) = %v, want %v", c.files, got, c.want)
		}
	}
}
