// Package httpquery is the HTTP front end of Floe's SQL engine: it decodes
// a query request, runs the statement through a Runner (the same engine the
// PostgreSQL-wire endpoint uses, with the same policies) and streams the
// result as Arrow IPC, NDJSON or CSV.
//
// # Request
//
// POST with either a JSON body
//
//	{"sql": "SELECT ... WHERE id = $1", "parameters": [42], "format": "ndjson"}
//
// or the SQL text itself as a text/plain (or application/sql) body. An
// optional "collaboration" (body or ?collaboration=) runs the statement in
// that clean-room collaboration, as SET floe.collaboration does on the
// PostgreSQL wire protocol. The
// format comes from "format" (body or ?format=), else from the Accept
// header, else NDJSON:
//
//	arrow   application/vnd.apache.arrow.stream   Arrow IPC stream
//	ndjson  application/x-ndjson                  one JSON object per row
//	csv     text/csv                              header row, then rows (RFC 4180)
//
// # Response
//
// Errors found before the first byte of the result (bad request, SQL
// errors, missing privileges) are returned to the caller to answer in its
// own error format. Once rows stream, an error can only end the stream: the
// response then carries the trailer Floe-Error with the message, NDJSON
// also ends with a line {"error": {...}}, and an Arrow stream lacks its
// end-of-stream marker. Every response carries the trailer Floe-Rows.
//
// NDJSON values: booleans and numbers as JSON (NaN and infinities, and
// numeric/decimal values, as strings so no digit is lost), json/jsonb
// values embedded, NULL as null, everything else as its PostgreSQL text
// form. CSV uses the PostgreSQL text form, an empty unquoted field for NULL
// and a quoted "" for the empty string. Arrow maps boolean, integer and
// floating-point types, date, timestamp (microseconds) and timestamptz
// (microseconds, UTC) and bytea to their Arrow types and everything else to
// utf8 in PostgreSQL text form.
package httpquery

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// Rows is a running statement's result.
type Rows interface {
	// Columns describes the rows (nil for a statement without rows).
	Columns() []pgwire.Column
	pgwire.Result
}

// Runner prepares and runs one statement with its arguments: nil, bool,
// string or json.Number values, which the Runner converts to the
// statement's parameter types.
type Runner func(ctx context.Context, sql string, args []any) (Rows, error)

// Format is a result encoding.
type Format string

// Formats.
const (
	Arrow  Format = "arrow"
	NDJSON Format = "ndjson"
	CSV    Format = "csv"
)

var contentTypes = map[Format]string{
	Arrow:  "application/vnd.apache.arrow.stream",
	NDJSON: "application/x-ndjson",
	CSV:    "text/csv; charset=utf-8",
}

// MaxSQLBytes bounds a request body.
const MaxSQLBytes = 1 << 20

// Request is a decoded query request.
type Request struct {
	SQL    string
	Args   []any
	Format Format
	// Collaboration is the clean-room collaboration the statement runs
	// in ("" for none).
	Collaboration string
}

type jsonRequest struct {
	SQL        *string           `json:"sql"`
	Parameters []json.RawMessage `json:"parameters"`
	Format     string            `json:"format"`
	// Collaboration names the clean-room collaboration to query in.
	Collaboration string `json:"collaboration"`
}

// Decode reads a query request (see the package doc).
func Decode(r *http.Request) (Request, error) {
	var q Request
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxSQLBytes+1))
	if err != nil {
		return q, floe.Wrap(floe.Invalid, err, "cannot read the request body")
	}
	if len(body) > MaxSQLBytes {
		return q, floe.E(floe.Invalid, "query", "the request body is larger than %d bytes", MaxSQLBytes)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	format := r.URL.Query().Get("format")
	q.Collaboration = r.URL.Query().Get("collaboration")
	switch ct {
	case "application/json":
		var jr jsonRequest
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&jr); err != nil {
			return q, floe.Wrap(floe.Invalid, err, "the request body is not a query object: %v", err)
		}
		if dec.More() {
			return q, floe.E(floe.Invalid, "query", "the request body holds more than one JSON value")
		}
		if jr.SQL == nil {
			return q, floe.E(floe.Invalid, "query", `the request has no "sql"`)
		}
		q.SQL = *jr.SQL
		for i, raw := range jr.Parameters {
			v, err := param(raw)
			if err != nil {
				return q, floe.E(floe.Invalid, "query", "parameter $%d: %v", i+1, err)
			}
			q.Args = append(q.Args, v)
		}
		if jr.Format != "" {
			format = jr.Format
		}
		if jr.Collaboration != "" {
			if q.Collaboration != "" && q.Collaboration != jr.Collaboration {
				return q, floe.E(floe.Invalid, "query", "the request names two collaborations (?collaboration= and \"collaboration\")")
			}
			q.Collaboration = jr.Collaboration
		}
	case "", "text/plain", "application/sql":
		q.SQL = string(body)
	default:
		return q, floe.E(floe.Invalid, "query", "content type %q is not supported: send application/json or text/plain", ct)
	}
	if strings.TrimSpace(q.SQL) == "" {
		return q, floe.E(floe.Invalid, "query", "the query is empty")
	}
	if q.Format, err = negotiate(format, r.Header.Get("Accept")); err != nil {
		return q, err
	}
	return q, nil
}

// param decodes one JSON parameter: null, a boolean, a string or a number
// (kept as json.Number).
func param(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch v.(type) {
	case nil, bool, string, json.Number:
		return v, nil
	}
	return nil, errors.New("must be null, a boolean, a number or a string")
}

// negotiate picks the result format from an explicit name or Accept.
func negotiate(explicit, accept string) (Format, error) {
	if explicit != "" {
		f := Format(strings.ToLower(explicit))
		if _, ok := contentTypes[f]; !ok {
			return "", floe.E(floe.Invalid, "format", "format %q is not one of arrow, ndjson, csv", explicit)
		}
		return f, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		switch mt {
		case "application/vnd.apache.arrow.stream":
			return Arrow, nil
		case "application/x-ndjson", "application/jsonl", "application/json":
			return NDJSON, nil
		case "text/csv":
			return CSV, nil
		}
	}
	return NDJSON, nil
}

// Stats describes a served query.
type Stats struct {
	Rows int64
	// Streaming is set once the response has started: a later error could
	// only end the stream (it is in the trailer), not change the status.
	Streaming bool
}

// Trailers of every query response.
const (
	TrailerRows  = "Floe-Rows"
	TrailerError = "Floe-Error"
)

// Write streams rows to w in format f. An error before the response
// started is returned with Stats.Streaming false, for the caller to answer;
// after that it is reported in the stream (see the package doc) and also
// returned.
func Write(ctx context.Context, w http.ResponseWriter, f Format, rows Rows) (Stats, error) {
	var st Stats
	enc, err := newEncoder(f, rows.Columns())
	if err != nil {
		return st, err
	}
	// Fetch the first row before committing to a status, so that errors
	// the engine reports on the first fetch still get a proper error.
	first, ferr := rows.Next()
	if ferr != nil && !errors.Is(ferr, io.EOF) {
		return st, ferr
	}
	h := w.Header()
	h.Set("Content-Type", contentTypes[f])
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Trailer", TrailerRows+", "+TrailerError)
	w.WriteHeader(http.StatusOK)
	st.Streaming = true
	bw := bufio.NewWriterSize(w, 64<<10)
	fail := func(err error) (Stats, error) {
		enc.abort(bw, err)
		_ = bw.Flush()
		h.Set(TrailerRows, strconv.FormatInt(st.Rows, 10))
		h.Set(TrailerError, oneLine(publicMessage(err)))
		return st, err
	}
	if err := enc.begin(bw); err != nil {
		return fail(err)
	}
	row, rerr := first, ferr
	for rerr == nil {
		if err := enc.row(bw, row); err != nil {
			return fail(err)
		}
		st.Rows++
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		row, rerr = rows.Next()
	}
	if !errors.Is(rerr, io.EOF) {
		return fail(rerr)
	}
	if err := enc.end(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	h.Set(TrailerRows, strconv.FormatInt(st.Rows, 10))
	return st, nil
}

// encoder writes one format.
type encoder interface {
	begin(w *bufio.Writer) error
	row(w *bufio.Writer, vals []any) error
	end(w *bufio.Writer) error
	// abort ends a stream after err (best effort).
	abort(w *bufio.Writer, err error)
}

func newEncoder(f Format, cols []pgwire.Column) (encoder, error) {
	switch f {
	case NDJSON:
		return newNDJSON(cols), nil
	case CSV:
		return newCSV(cols), nil
	case Arrow:
		return newArrow(cols)
	}
	return nil, floe.E(floe.Invalid, "format", "unknown format %q", f)
}

// publicMessage is the message of err a client may see.
func publicMessage(err error) string {
	var pe *pgwire.Error
	if errors.As(err, &pe) {
		return pe.Message
	}
	if errors.Is(err, context.Canceled) {
		return "the query was cancelled"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the query timed out"
	}
	if floe.KindOf(err) != floe.Internal {
		return floe.PublicMessage(err)
	}
	return "internal error"
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// errValue is an encoder's error for a value it cannot encode.
func errValue(col pgwire.Column, v any) error {
	return fmt.Errorf("httpquery: column %q: cannot encode %T as type %d", col.Name, v, col.TypeOID)
}
