package httpquery

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// fakeRows yields rows, then err (io.EOF when nil).
type fakeRows struct {
	cols []pgwire.Column
	rows [][]any
	err  error
	i    int
}

func (r *fakeRows) Columns() []pgwire.Column { return r.cols }
func (r *fakeRows) Tag() string              { return "SELECT" }
func (r *fakeRows) Close() error             { return nil }
func (r *fakeRows) Next() ([]any, error) {
	if r.i < len(r.rows) {
		r.i++
		return r.rows[r.i-1], nil
	}
	if r.err != nil {
		return nil, r.err
	}
	return nil, io.EOF
}

var ts = time.Date(2026, 12, 3, 4, 5, 6, 789000000, time.UTC)

func sample() *fakeRows {
	return &fakeRows{
		cols: []pgwire.Column{{Name: "id", TypeOID: pgwire.Int8OID}, {Name: "name", TypeOID: pgwire.TextOID},
			{Name: "ok", TypeOID: pgwire.BoolOID}, {Name: "x", TypeOID: pgwire.Float8OID},
			{Name: "amount", TypeOID: pgwire.NumericOID}, {Name: "at", TypeOID: pgwire.TimestamptzOID},
			{Name: "day", TypeOID: pgwire.DateOID}, {Name: "doc", TypeOID: pgwire.JSONOID}},
		rows: [][]any{
			{int64(1), "ann, \"the\" first", true, 1.5, "12.50", ts, ts, `{"a":[1,2]}`},
			{int32(2), "", false, math.NaN(), "0", ts, ts, nil},
			{nil, nil, nil, nil, nil, nil, nil, nil},
		},
	}
}

func serve(t *testing.T, f Format, rows Rows) (*httptest.ResponseRecorder, Stats, error) {
	t.Helper()
	w := httptest.NewRecorder()
	st, err := Write(context.Background(), w, f, rows)
	return w, st, err
}

func TestNDJSON(t *testing.T) {
	w, st, err := serve(t, NDJSON, sample())
	if err != nil || st.Rows != 3 {
		t.Fatalf("Write: %+v %v", st, err)
	}
	want := `{"id":1,"name":"ann, \"the\" first","ok":true,"x":1.5,"amount":"12.50","at":"2026-12-03 04:05:06.789+00","day":"2026-12-03","doc":{"a":[1,2]}}
{"id":2,"name":"","ok":false,"x":"NaN","amount":"0","at":"2026-12-03 04:05:06.789+00","day":"2026-12-03","doc":null}
{"id":null,"name":null,"ok":null,"x":null,"amount":null,"at":null,"day":null,"doc":null}
`
	if got := w.Body.String(); got != want {
		t.Errorf("body:\n%s\nwant:\n%s", got, want)
	}
	for _, line := range strings.Split(strings.TrimSpace(w.Body.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("invalid JSON line %s", line)
		}
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	if n := w.Result().Trailer.Get(TrailerRows); n != "3" {
		t.Errorf("rows trailer %q", n)
	}
}

func TestCSV(t *testing.T) {
	w, _, err := serve(t, CSV, sample())
	if err != nil {
		t.Fatal(err)
	}
	want := "\"id\",\"name\",\"ok\",\"x\",\"amount\",\"at\",\"day\",\"doc\"\r\n" +
		"1,\"ann, \"\"the\"\" first\",t,1.5,12.50,2026-12-03 04:05:06.789+00,2026-12-03,\"{\"\"a\"\":[1,2]}\"\r\n" +
		"2,\"\",f,NaN,0,2026-12-03 04:05:06.789+00,2026-12-03,\r\n" +
		",,,,,,,\r\n"
	if got := w.Body.String(); got != want {
		t.Errorf("body:\n%q\nwant:\n%q", got, want)
	}
	recs, err := csv.NewReader(strings.NewReader(w.Body.String())).ReadAll()
	if err != nil || len(recs) != 4 || recs[1][1] != `ann, "the" first` {
		t.Errorf("encoding/csv reads %q, %v", recs, err)
	}
}

func TestArrow(t *testing.T) {
	rows := sample()
	var many [][]any
	for i := range arrowBatchRows + 10 { // more than one batch
		many = append(many, []any{int64(i), "n", true, float64(i), "1", ts, ts, "{}"})
	}
	rows.rows = append(rows.rows, many...)
	w, st, err := serve(t, Arrow, rows)
	if err != nil || st.Rows != int64(3+len(many)) {
		t.Fatalf("Write: %+v %v", st, err)
	}
	r, err := ipc.NewReader(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	wantTypes := []arrow.Type{arrow.INT64, arrow.STRING, arrow.BOOL, arrow.FLOAT64, arrow.STRING, arrow.TIMESTAMP, arrow.DATE32, arrow.STRING}
	for i, f := range r.Schema().Fields() {
		if f.Type.ID() != wantTypes[i] {
			t.Errorf("field %s: type %s", f.Name, f.Type)
		}
	}
	n, batches := 0, 0
	for r.Next() {
		rec := r.RecordBatch()
		if batches == 0 {
			if v := rec.Column(0).(*array.Int64).Value(1); v != 2 {
				t.Errorf("id[1] = %d", v)
			}
			if v := rec.Column(1).(*array.String).Value(0); v != `ann, "the" first` {
				t.Errorf("name[0] = %q", v)
			}
			if v := rec.Column(5).(*array.Timestamp).Value(0); v != arrow.Timestamp(ts.UnixMicro()) {
				t.Errorf("at[0] = %v", v)
			}
			if !rec.Column(0).IsNull(2) || !rec.Column(7).IsNull(1) {
				t.Error("NULLs lost")
			}
		}
		n += int(rec.NumRows())
		batches++
	}
	if r.Err() != nil || n != 3+len(many) || batches != 2 {
		t.Errorf("read %d rows in %d batches, err %v", n, batches, r.Err())
	}
}

func TestArrowEmpty(t *testing.T) {
	w, _, err := serve(t, Arrow, &fakeRows{cols: []pgwire.Column{{Name: "a", TypeOID: pgwire.Int4OID}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatalf("empty stream: %v", err)
	}
	if r.Next() || r.Err() != nil || r.Schema().Field(0).Name != "a" {
		t.Errorf("empty stream: rows or err %v", r.Err())
	}
}

// TestErrors: an error on the first fetch is returned before any byte is
// written; a later one ends the stream with the error in the trailer (and
// in NDJSON's last line).
func TestErrors(t *testing.T) {
	boom := &pgwire.Error{Code: "22012", Message: "division by zero"}
	w, st, err := serve(t, NDJSON, &fakeRows{cols: sample().cols, err: boom})
	if !errors.Is(err, boom) || st.Streaming || w.Body.Len() != 0 {
		t.Errorf("first-row error: %+v %v body %q", st, err, w.Body.String())
	}
	for _, f := range []Format{NDJSON, CSV, Arrow} {
		rows := sample()
		rows.err = boom
		w, st, err := serve(t, f, rows)
		if !errors.Is(err, boom) || !st.Streaming || st.Rows != 3 {
			t.Errorf("%s: %+v %v", f, st, err)
		}
		if tr := w.Result().Trailer.Get(TrailerError); tr != "division by zero" {
			t.Errorf("%s: error trailer %q", f, tr)
		}
		if f == NDJSON && !strings.HasSuffix(w.Body.String(), `{"error":{"message":"division by zero"}}`+"\n") {
			t.Errorf("ndjson error line missing: %q", w.Body.String())
		}
		if f == Arrow {
			r, err := ipc.NewReader(bytes.NewReader(w.Body.Bytes()))
			if err == nil {
				for r.Next() {
				}
				if r.Err() == nil {
					t.Error("arrow: an aborted stream reads as complete")
				}
			}
		}
	}
	// A value of the wrong type for its column is an error, not garbage.
	_, _, err = serve(t, NDJSON, &fakeRows{cols: []pgwire.Column{{Name: "b", TypeOID: pgwire.BoolOID}}, rows: [][]any{{"yes"}}})
	if err == nil {
		t.Error("a string in a bool column was encoded")
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, ct, accept, query, body string
		want                          Request
		err                           string
	}{
		{"json", "application/json", "", "", `{"sql":"SELECT $1, $2","parameters":[42, "x", null, true, 1.5]}`,
			Request{SQL: "SELECT $1, $2", Args: []any{json.Number("42"), "x", nil, true, json.Number("1.5")}, Format: NDJSON}, ""},
		{"json format", "application/json; charset=utf-8", "text/csv", "", `{"sql":"SELECT 1","format":"ARROW"}`,
			Request{SQL: "SELECT 1", Format: Arrow}, ""},
		{"text", "text/plain", "text/csv", "", "SELECT 1", Request{SQL: "SELECT 1", Format: CSV}, ""},
		{"no content type", "", "application/vnd.apache.arrow.stream", "", "SELECT 1", Request{SQL: "SELECT 1", Format: Arrow}, ""},
		{"query format wins", "text/plain", "text/csv", "format=ndjson", "SELECT 1", Request{SQL: "SELECT 1", Format: NDJSON}, ""},
		{"bad format", "text/plain", "", "format=xml", "SELECT 1", Request{}, `format "xml" is not one of`},
		{"empty", "text/plain", "", "", "  \n", Request{}, "the query is empty"},
		{"no sql", "application/json", "", "", `{"parameters":[]}`, Request{}, `the request has no "sql"`},
		{"unknown field", "application/json", "", "", `{"sql":"x","bogus":1}`, Request{}, "not a query object"},
		{"object param", "application/json", "", "", `{"sql":"x","parameters":[{"a":1}]}`, Request{}, "parameter $1"},
		{"two values", "application/json", "", "", `{"sql":"x"} {}`, Request{}, "more than one JSON value"},
		{"content type", "application/xml", "", "", `<q/>`, Request{}, "not supported"},
		{"too large", "text/plain", "", "", strings.Repeat("x", MaxSQLBytes+1), Request{}, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/query?"+tt.query, strings.NewReader(tt.body))
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			if tt.accept != "" {
				r.Header.Set("Accept", tt.accept)
			}
			got, err := Decode(r)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tt.want)
			if string(g) != string(w) {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("application/json", `{"sql":"SELECT $1","parameters":[1,"a",null]}`)
	f.Add("text/plain", "SELECT 1")
	f.Add("application/json", `{"sql":`)
	f.Add("application/json", `{"sql":"SELECT 1","collaboration":"overlap"}`)
	f.Fuzz(func(t *testing.T, ct, body string) {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/query", strings.NewReader(body))
		r.Header.Set("Content-Type", ct)
		q, err := Decode(r)
		if err == nil && (strings.TrimSpace(q.SQL) == "" || q.Format == "") {
			t.Fatalf("accepted %q as %+v", body, q)
		}
	})
}
