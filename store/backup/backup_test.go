package backup_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/store/backup"
)

type table struct {
	t    backup.Table
	rows [][]any
}

func sample() []table {
	return []table{
		{backup.Table{Name: "warehouses", Columns: []backup.Column{{Name: "name", Kind: backup.KindText}, {Name: "location", Kind: backup.KindText}}},
			[][]any{{"wh", "file:///w"}, {"é\n\"x\"", nil}}},
		{backup.Table{Name: "empty", Columns: []backup.Column{{Name: "a", Kind: backup.KindInt}}}, nil},
		{backup.Table{Name: "keys", Columns: []backup.Column{{Name: "id", Kind: backup.KindInt}, {Name: "secret", Kind: backup.KindBlob}}},
			[][]any{{int64(-1 << 63), []byte{0, 1, 255}}, {int64(1<<63 - 1), []byte{}}, {nil, nil}}},
	}
}

func write(t testing.TB, tables []table) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := backup.NewWriter(&buf, backup.Header{FloeVersion: "v1", SchemaVersion: 19, Dialect: "sqlite",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), AuditHead: backup.AuditHead{Seq: 3, Hash: "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if err := w.BeginTable(tb.t); err != nil {
			t.Fatal(err)
		}
		for _, r := range tb.rows {
			if err := w.Row(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// read reads a whole backup, skipping the rows of tables named in skip.
func read(data []byte, skip map[string]bool) (backup.Header, []table, error) {
	rd, err := backup.NewReader(bytes.NewReader(data))
	if err != nil {
		return backup.Header{}, nil, err
	}
	var out []table
	for {
		tb, err := rd.NextTable()
		if errors.Is(err, io.EOF) {
			return rd.Header(), out, nil
		}
		if err != nil {
			return rd.Header(), out, err
		}
		out = append(out, table{t: tb})
		if skip[tb.Name] {
			continue
		}
		for {
			row, err := rd.NextRow()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return rd.Header(), out, err
			}
			out[len(out)-1].rows = append(out[len(out)-1].rows, row)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	data := write(t, sample())
	h, got, err := read(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Format != backup.Format || h.Version != backup.Version || h.SchemaVersion != 19 || h.AuditHead.Seq != 3 {
		t.Fatalf("header %+v", h)
	}
	if want := sample(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	// Skipping a table's rows still checks the whole file.
	if _, got, err := read(data, map[string]bool{"warehouses": true}); err != nil || len(got) != 3 {
		t.Fatalf("skipping: %v %v", got, err)
	}
}

func TestWriterRefuses(t *testing.T) {
	cases := []struct {
		name string
		fn   func(w *backup.Writer) error
		want string
	}{
		{"row first", func(w *backup.Writer) error { return w.Row([]any{int64(1)}) }, "before any table"},
		{"bad name", func(w *backup.Writer) error {
			return w.BeginTable(backup.Table{Name: "a b", Columns: []backup.Column{{Name: "c", Kind: backup.KindInt}}})
		}, "not an identifier"},
		{"bad kind", func(w *backup.Writer) error {
			return w.BeginTable(backup.Table{Name: "a", Columns: []backup.Column{{Name: "c", Kind: "float"}}})
		}, "kind"},
		{"twice", func(w *backup.Writer) error {
			tb := backup.Table{Name: "a", Columns: []backup.Column{{Name: "c", Kind: backup.KindInt}}}
			if err := w.BeginTable(tb); err != nil {
				return err
			}
			return w.BeginTable(tb)
		}, "twice"},
		{"wrong type", func(w *backup.Writer) error {
			if err := w.BeginTable(backup.Table{Name: "a", Columns: []backup.Column{{Name: "c", Kind: backup.KindInt}}}); err != nil {
				return err
			}
			return w.Row([]any{"x"})
		}, "text value in a int column"},
		{"arity", func(w *backup.Writer) error {
			if err := w.BeginTable(backup.Table{Name: "a", Columns: []backup.Column{{Name: "c", Kind: backup.KindInt}}}); err != nil {
				return err
			}
			return w.Row([]any{int64(1), int64(2)})
		}, "2 values for 1 columns"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := backup.NewWriter(io.Discard, backup.Header{SchemaVersion: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.fn(w); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func gz(s string) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return buf.Bytes()
}

func TestReaderRefuses(t *testing.T) {
	hdr := `{"header":{"format":"floe-backup","version":1,"schema_version":19}}` + "\n"
	tbl := `{"table":{"name":"a","columns":[{"name":"c","kind":"int"},{"name":"b","kind":"blob"}]}}` + "\n"
	cases := []struct {
		name, data, want string
	}{
		{"no trailer", hdr + tbl, "truncated"},
		{"no newline at the end", hdr + strings.TrimSuffix(tbl, "\n"), "truncated"},
		{"row before table", hdr + `{"row":[1]}` + "\n", "before any table"},
		{"not an int", hdr + tbl + `{"row":[1.5,null]}` + "\n", "not an integer"},
		{"not base64", hdr + tbl + `{"row":[1,"!!"]}` + "\n", "not base64"},
		{"arity", hdr + tbl + `{"row":[1]}` + "\n", "1 values for the 2 columns"},
		{"two kinds of line", hdr + `{"row":[1],"end":{}}` + "\n", "not one of"},
		{"unknown field", hdr + `{"rows":[1]}` + "\n", "unknown field"},
		{"wrong format", `{"header":{"format":"pg_dump","version":1,"schema_version":1}}` + "\n", `format "pg_dump"`},
		{"schema 0", `{"header":{"format":"floe-backup","version":1,"schema_version":0}}` + "\n", "schema version 0"},
		{"table twice", hdr + tbl + tbl, "appears twice"},
		{"injection", hdr + `{"table":{"name":"a; drop table x","columns":[{"name":"c","kind":"int"}]}}` + "\n", "not an identifier"},
		{"bad hash", hdr + tbl + `{"end":{"rows":{"a":0},"sha256":"00"}}` + "\n", "SHA-256 mismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := read(gz(tc.data), nil)
			if err == nil || !errors.Is(err, backup.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
	var many strings.Builder
	many.WriteString(hdr)
	for i := range backup.MaxTables + 1 {
		fmt.Fprintf(&many, `{"table":{"name":"t%d","columns":[{"name":"c","kind":"int"}]}}`+"\n", i)
	}
	if _, _, err := read(gz(many.String()), nil); err == nil || !strings.Contains(err.Error(), "more than 1000 tables") {
		t.Fatalf("too many tables: %v", err)
	}
	long := hdr + `{"row":["` + strings.Repeat("x", backup.MaxLine) + `"]}` + "\n"
	if _, _, err := read(gz(long), nil); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("long line: %v", err)
	}
}

func gunzip(t testing.TB, b []byte) []byte {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzReader: the reader never panics, and whatever it accepts is a file
// that a writer reproduces exactly (so nothing unchecked gets through).
// The input is the file (gzip) when raw, else the text inside the gzip.
func FuzzReader(f *testing.F) {
	f.Add(false, gunzip(f, write(f, sample())))
	f.Add(false, gunzip(f, write(f, nil)))
	f.Add(true, write(f, sample()))
	f.Add(false, []byte(`{"header":{"format":"floe-backup","version":1,"schema_version":19}}`+"\n"))
	f.Add(true, []byte("garbage"))
	f.Fuzz(func(t *testing.T, raw bool, data []byte) {
		if !raw {
			data = gz(string(data))
		}
		h, tables, err := read(data, nil)
		if err != nil {
			if !errors.Is(err, backup.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		// Accepted: rewriting what was read gives the same content.
		var buf bytes.Buffer
		w, err := backup.NewWriter(&buf, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			if err := w.BeginTable(tb.t); err != nil {
				t.Fatalf("accepted table %+v that the writer refuses: %v", tb.t, err)
			}
			for _, r := range tb.rows {
				if err := w.Row(r); err != nil {
					t.Fatalf("accepted row %v that the writer refuses: %v", r, err)
				}
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, again, err := read(buf.Bytes(), nil)
		if err != nil || !reflect.DeepEqual(again, tables) {
			t.Fatalf("rewritten file reads differently: %v", err)
		}
	})
}
