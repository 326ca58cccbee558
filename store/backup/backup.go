// Package backup is the file format of `floe backup`: a portable,
// dialect-neutral snapshot of the metadata store.
//
// A backup is one gzip stream of newline-delimited JSON lines:
//
//	{"header":{...}}                               format, versions, audit head
//	{"table":{"name":"t","columns":[{"name":"c","kind":"int"},...]}}
//	{"row":[1,"text","YmxvYg==",null]}             one line per row of the table above
//	...                                            further tables and rows
//	{"end":{"rows":{"t":1,...},"sha256":"..."}}   the trailer
//
// Values are encoded by their column's kind: int as a JSON number, text as a
// JSON string, blob as a base64 JSON string, and SQL NULL as null. Times are
// text in Floe's stored form (UTC, microseconds, RFC 3339), booleans ints, so
// the same file restores into SQLite or PostgreSQL. The trailer's sha256 is
// the SHA-256 of every line before it (their exact bytes, newlines
// included) and its rows the row count of every table: a reader refuses a
// file whose hash or counts do not match, or that ends before the trailer.
//
// The package knows nothing of databases; store/sqlstore writes and
// restores backups with it.
package backup

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"time"
)

// Format is the value of Header.Format.
const Format = "floe-backup"

// Version is the format version this build writes and the newest it reads.
const Version = 1

// MaxLine bounds the length of one line (one row) a Reader accepts.
const MaxLine = 64 << 20

// MaxTables bounds how many tables a Reader accepts.
const MaxTables = 1000

// ErrInvalid is wrapped by every error a Reader returns for a file that is
// not a complete, intact backup.
var ErrInvalid = errors.New("invalid backup file")

// Header is the first line of a backup.
type Header struct {
	// Format is always "floe-backup".
	Format string `json:"format"`
	// Version is the file format version.
	Version int `json:"version"`
	// FloeVersion is the version of the floe binary that wrote the file.
	FloeVersion string `json:"floe_version"`
	// SchemaVersion is the newest store migration applied to the source.
	SchemaVersion int `json:"schema_version"`
	// CreatedAt is when the snapshot was taken.
	CreatedAt time.Time `json:"created_at"`
	// Dialect is the source store's dialect: sqlite or postgres.
	Dialect string `json:"dialect"`
	// AuditHead is the head of the audit chain in the snapshot.
	AuditHead AuditHead `json:"audit_head"`
	// AuditCheckpointSeq is the seq of the signed pruning checkpoint the
	// chain starts after (0: never pruned).
	AuditCheckpointSeq int64 `json:"audit_checkpoint_seq"`
}

// AuditHead is the last record of the audit chain.
type AuditHead struct {
	// Seq is the record's sequence number (0: empty log).
	Seq int64 `json:"seq"`
	// Hash is the record's hash.
	Hash string `json:"hash"`
}

// Kind is the dialect-neutral type of a column.
type Kind string

// The column kinds.
const (
	// KindInt is a 64-bit integer (booleans are 0 or 1). Go value int64.
	KindInt Kind = "int"
	// KindText is a string (times are RFC 3339 text). Go value string.
	KindText Kind = "text"
	// KindBlob is bytes. Go value []byte.
	KindBlob Kind = "blob"
)

// Column is one column of a table.
type Column struct {
	// Name is the column's name.
	Name string `json:"name"`
	// Kind is its type.
	Kind Kind `json:"kind"`
}

// Table starts the rows of one store table.
type Table struct {
	// Name is the table's name.
	Name string `json:"name"`
	// Columns are its columns, in the order of every row's values.
	Columns []Column `json:"columns"`
}

// Trailer is the last line of a backup.
type Trailer struct {
	// Rows is the row count of every table.
	Rows map[string]int64 `json:"rows"`
	// SHA256 is the hex SHA-256 of every line before the trailer.
	SHA256 string `json:"sha256"`
}

// Writer writes a backup.
type Writer struct {
	gz   *gzip.Writer
	bw   *bufio.Writer
	h    hash.Hash
	cur  *Table
	rows map[string]int64
	buf  bytes.Buffer
	vals []any
	done bool
}

// NewWriter writes h (Format and Version are filled in) to w and returns a
// Writer for the tables.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	bw := &Writer{gz: gz, bw: bufio.NewWriterSize(gz, 256<<10), h: sha256.New(), rows: map[string]int64{}}
	h.Format, h.Version = Format, Version
	h.CreatedAt = h.CreatedAt.UTC()
	if err := bw.line(struct {
		Header Header `json:"header"`
	}{h}); err != nil {
		return nil, err
	}
	return bw, nil
}

func (w *Writer) line(v any) error {
	w.buf.Reset()
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line with \n
		return fmt.Errorf("backup: encode: %w", err)
	}
	w.h.Write(w.buf.Bytes())
	if _, err := w.bw.Write(w.buf.Bytes()); err != nil {
		return fmt.Errorf("backup: write: %w", err)
	}
	return nil
}

// BeginTable starts the rows of table t.
func (w *Writer) BeginTable(t Table) error {
	if err := checkTable(t); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, dup := w.rows[t.Name]; dup {
		return fmt.Errorf("backup: table %s written twice", t.Name)
	}
	w.rows[t.Name] = 0
	w.cur = &t
	return w.line(struct {
		Table Table `json:"table"`
	}{t})
}

// Row writes one row of the current table: one value per column, nil or
// the Go value of the column's kind (int64, string, []byte).
func (w *Writer) Row(vals []any) error {
	if w.cur == nil {
		return errors.New("backup: row before any table")
	}
	if len(vals) != len(w.cur.Columns) {
		return fmt.Errorf("backup: table %s: %d values for %d columns", w.cur.Name, len(vals), len(w.cur.Columns))
	}
	w.vals = w.vals[:0]
	for i, v := range vals {
		c := w.cur.Columns[i]
		switch x := v.(type) {
		case nil:
			w.vals = append(w.vals, nil)
		case int64:
			if c.Kind != KindInt {
				return fmt.Errorf("backup: %s.%s: int value in a %s column", w.cur.Name, c.Name, c.Kind)
			}
			w.vals = append(w.vals, x)
		case string:
			if c.Kind != KindText {
				return fmt.Errorf("backup: %s.%s: text value in a %s column", w.cur.Name, c.Name, c.Kind)
			}
			w.vals = append(w.vals, x)
		case []byte:
			if c.Kind != KindBlob {
				return fmt.Errorf("backup: %s.%s: blob value in a %s column", w.cur.Name, c.Name, c.Kind)
			}
			w.vals = append(w.vals, base64.StdEncoding.EncodeToString(x))
		default:
			return fmt.Errorf("backup: %s.%s: unsupported value type %T", w.cur.Name, c.Name, v)
		}
	}
	w.rows[w.cur.Name]++
	return w.line(struct {
		Row []any `json:"row"`
	}{w.vals})
}

// Close writes the trailer and flushes the gzip stream (it does not close
// the underlying writer) and returns the trailer.
func (w *Writer) Close() (Trailer, error) {
	if w.done {
		return Trailer{}, errors.New("backup: writer closed twice")
	}
	w.done = true
	t := Trailer{Rows: w.rows, SHA256: hex.EncodeToString(w.h.Sum(nil))}
	if err := w.line(struct {
		End Trailer `json:"end"`
	}{t}); err != nil {
		return t, err
	}
	if err := w.bw.Flush(); err != nil {
		return t, fmt.Errorf("backup: write: %w", err)
	}
	if err := w.gz.Close(); err != nil {
		return t, fmt.Errorf("backup: write: %w", err)
	}
	return t, nil
}

// Reader reads a backup, checking it as it goes. Its errors for a damaged
// file wrap ErrInvalid; the hash and the row counts are checked when the
// trailer is read, so a caller must apply nothing it read until NextTable
// has returned io.EOF (restore does all its writes in one transaction).
type Reader struct {
	gz      *gzip.Reader
	br      *bufio.Reader
	h       hash.Hash
	header  Header
	cur     *Table
	pending *Table // the next table, read while reading rows
	rows    map[string]int64
	trailer *Trailer
	lineNo  int
}

// NewReader reads and checks the header of the backup in r.
func NewReader(r io.Reader) (*Reader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, invalid("not a gzip stream: %v", err)
	}
	gz.Multistream(false)
	rd := &Reader{gz: gz, br: bufio.NewReaderSize(gz, 256<<10), h: sha256.New(), rows: map[string]int64{}}
	raw, err := rd.readLine()
	if err != nil {
		return nil, err
	}
	var l struct {
		Header *Header `json:"header"`
	}
	if err := strictUnmarshal(raw, &l); err != nil || l.Header == nil {
		return nil, invalid("the first line is not a backup header")
	}
	rd.h.Write(raw)
	rd.h.Write([]byte{'\n'})
	h := *l.Header
	if h.Format != Format {
		return nil, invalid("format %q, want %q", h.Format, Format)
	}
	if h.Version < 1 || h.Version > Version {
		return nil, fmt.Errorf("%w: format version %d; this floe reads versions 1 to %d (upgrade floe)", ErrInvalid, h.Version, Version)
	}
	if h.SchemaVersion < 1 {
		return nil, invalid("schema version %d", h.SchemaVersion)
	}
	rd.header = h
	return rd, nil
}

// Header returns the backup's header.
func (r *Reader) Header() Header { return r.header }

// Trailer returns the trailer once NextTable has returned io.EOF.
func (r *Reader) Trailer() (Trailer, bool) {
	if r.trailer == nil {
		return Trailer{}, false
	}
	return *r.trailer, true
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// readLine returns the next line without its newline, hashing it.
func (r *Reader) readLine() ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > MaxLine {
			return nil, invalid("line %d is longer than %d bytes", r.lineNo+1, MaxLine)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, invalid("truncated: the file ends before its trailer (line %d)", r.lineNo+1)
		}
		return nil, invalid("line %d: %v", r.lineNo+1, err)
	}
	r.lineNo++
	return out[:len(out)-1], nil
}

// strictUnmarshal decodes b into v, refusing unknown fields and trailing data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// next reads the next line: a table, a row or the trailer.
func (r *Reader) next() (*Table, []json.RawMessage, error) {
	if r.trailer != nil {
		return nil, nil, io.EOF
	}
	raw, err := r.readLine()
	if err != nil {
		return nil, nil, err
	}
	var l struct {
		Table *Table            `json:"table"`
		Row   []json.RawMessage `json:"row"`
		End   *Trailer          `json:"end"`
	}
	if err := strictUnmarshal(raw, &l); err != nil {
		return nil, nil, invalid("line %d: %v", r.lineNo, err)
	}
	set := 0
	for _, ok := range []bool{l.Table != nil, l.Row != nil, l.End != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return nil, nil, invalid("line %d is not one of table, row or end", r.lineNo)
	}
	if l.End != nil {
		if err := r.finish(*l.End); err != nil {
			return nil, nil, err
		}
		return nil, nil, io.EOF
	}
	r.h.Write(raw)
	r.h.Write([]byte{'\n'})
	if l.Table != nil {
		if err := checkTable(*l.Table); err != nil {
			return nil, nil, fmt.Errorf("%w: line %d: %w", ErrInvalid, r.lineNo, err)
		}
		if _, dup := r.rows[l.Table.Name]; dup {
			return nil, nil, invalid("line %d: table %s appears twice", r.lineNo, l.Table.Name)
		}
		if len(r.rows) >= MaxTables {
			return nil, nil, invalid("more than %d tables", MaxTables)
		}
		r.rows[l.Table.Name] = 0
		return l.Table, nil, nil
	}
	return nil, l.Row, nil
}

// finish checks the trailer t and that nothing follows it.
func (r *Reader) finish(t Trailer) error {
	if got := hex.EncodeToString(r.h.Sum(nil)); got != t.SHA256 {
		return invalid("SHA-256 mismatch: the body hashes to %s, the trailer says %s (the file was modified)", got, t.SHA256)
	}
	if len(t.Rows) != len(r.rows) {
		return invalid("the trailer counts %d tables, the file has %d", len(t.Rows), len(r.rows))
	}
	for name, n := range r.rows {
		if want, ok := t.Rows[name]; !ok || want != n {
			return invalid("table %s has %d rows, the trailer says %d", name, n, want)
		}
	}
	if _, err := r.br.ReadByte(); !errors.Is(err, io.EOF) {
		return invalid("data after the trailer")
	}
	if err := r.gz.Close(); err != nil {
		return invalid("gzip: %v", err)
	}
	r.trailer = &t
	return nil
}

// NextTable skips what is left of the current table's rows and returns the
// next table. It returns io.EOF after the trailer was read and checked.
func (r *Reader) NextTable() (Table, error) {
	if r.pending != nil {
		t := *r.pending
		r.pending, r.cur = nil, &t
		return t, nil
	}
	for {
		t, row, err := r.next()
		if err != nil {
			return Table{}, err
		}
		if t != nil {
			r.cur = t
			return *t, nil
		}
		if r.cur == nil {
			return Table{}, invalid("line %d: a row before any table", r.lineNo)
		}
		if _, err := r.decodeRow(row); err != nil {
			return Table{}, err
		}
	}
}

// NextRow returns the next row of the current table, its values nil or of
// the Go type of their column's kind (int64, string, []byte). It returns
// io.EOF at the end of the table.
func (r *Reader) NextRow() ([]any, error) {
	if r.pending != nil || r.cur == nil {
		return nil, io.EOF
	}
	t, row, err := r.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			r.cur = nil
		}
		return nil, err
	}
	if t != nil {
		r.pending = t
		return nil, io.EOF
	}
	return r.decodeRow(row)
}

func (r *Reader) decodeRow(row []json.RawMessage) ([]any, error) {
	t := r.cur
	if len(row) != len(t.Columns) {
		return nil, invalid("line %d: %d values for the %d columns of %s", r.lineNo, len(row), len(t.Columns), t.Name)
	}
	vals := make([]any, len(row))
	for i, raw := range row {
		c := t.Columns[i]
		if string(raw) == "null" {
			continue
		}
		switch c.Kind {
		case KindInt:
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return nil, invalid("line %d: %s.%s: not an integer", r.lineNo, t.Name, c.Name)
			}
			vals[i] = n
		case KindText, KindBlob:
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, invalid("line %d: %s.%s: not a string", r.lineNo, t.Name, c.Name)
			}
			if c.Kind == KindText {
				vals[i] = s
				break
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, invalid("line %d: %s.%s: not base64", r.lineNo, t.Name, c.Name)
			}
			vals[i] = b
		}
	}
	r.rows[t.Name]++
	return vals, nil
}

// checkTable checks that t's names are plain identifiers (they are put into
// SQL text) and its kinds known.
func checkTable(t Table) error {
	if !identifier(t.Name) {
		return fmt.Errorf("table name %q is not an identifier", t.Name)
	}
	if len(t.Columns) == 0 || len(t.Columns) > 200 {
		return fmt.Errorf("table %s has %d columns", t.Name, len(t.Columns))
	}
	seen := make(map[string]bool, len(t.Columns))
	for _, c := range t.Columns {
		if !identifier(c.Name) {
			return fmt.Errorf("table %s: column name %q is not an identifier", t.Name, c.Name)
		}
		if seen[c.Name] {
			return fmt.Errorf("table %s: column %s twice", t.Name, c.Name)
		}
		seen[c.Name] = true
		switch c.Kind {
		case KindInt, KindText, KindBlob:
		default:
			return fmt.Errorf("table %s: column %s has kind %q", t.Name, c.Name, c.Kind)
		}
	}
	return nil
}

// identifier reports whether s is a lower-case SQL identifier [a-z_][a-z0-9_]*
// of at most 63 bytes.
func identifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
