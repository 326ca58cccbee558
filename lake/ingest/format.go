package ingest

import (
	"bytes"
	"path"
	"strings"

	"github.com/floe-lake/floe"
)

// Format is an input format.
type Format string

// The input formats.
const (
	// CSV is comma-separated values with a header row (RFC 4180).
	CSV Format = "csv"
	// TSV is CSV separated by tabs.
	TSV Format = "tsv"
	// NDJSON is one JSON object per line.
	NDJSON Format = "ndjson"
	// Parquet is an Apache Parquet file.
	Parquet Format = "parquet"
	// ArrowFile is the Arrow IPC file format (Feather v2).
	ArrowFile Format = "arrow"
	// ArrowStream is the Arrow IPC streaming format.
	ArrowStream Format = "arrows"
)

// Formats lists the formats by name.
var Formats = []Format{CSV, TSV, NDJSON, Parquet, ArrowFile, ArrowStream}

// ParseFormat reads a format name: csv, tsv, ndjson (also json, jsonl),
// parquet, arrow (also feather, ipc) or arrows (also arrow-stream). ""
// means: detect it.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return "", nil
	case "csv":
		return CSV, nil
	case "tsv":
		return TSV, nil
	case "ndjson", "json", "jsonl":
		return NDJSON, nil
	case "parquet":
		return Parquet, nil
	case "arrow", "feather", "ipc":
		return ArrowFile, nil
	case "arrows", "arrow-stream":
		return ArrowStream, nil
	}
	return "", floe.E(floe.Invalid, "format", "unknown format %q (want csv, tsv, ndjson, parquet, arrow or arrows)", s)
}

// FormatOfName guesses a format from a file name's extension ("" if
// unknown). A trailing .gz is not understood.
func FormatOfName(name string) Format {
	switch strings.ToLower(path.Ext(name)) {
	case ".csv":
		return CSV
	case ".tsv", ".tab":
		return TSV
	case ".ndjson", ".jsonl", ".json":
		return NDJSON
	case ".parquet", ".pq":
		return Parquet
	case ".arrow", ".feather", ".ipc":
		return ArrowFile
	case ".arrows":
		return ArrowStream
	}
	return ""
}

// sniff guesses a format from the first bytes of the input.
func sniff(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return Parquet
	case bytes.HasPrefix(head, []byte("ARROW1")):
		return ArrowFile
	case bytes.HasPrefix(head, []byte{0xff, 0xff, 0xff, 0xff}):
		return ArrowStream
	}
	if t := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return NDJSON
	}
	return CSV
}
