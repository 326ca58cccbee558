package engine

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Row lineage (Iceberg v3): every row of a v3 table has a _row_id and a
// _last_updated_sequence_number. A data file may store them (a rewrite
// keeps them); where it does not (or stores NULL), _row_id is the file's
// first_row_id plus the row's position in the file and
// _last_updated_sequence_number the file's data sequence number. The SQL
// endpoint shows them as two more columns of a v3 table's view when a
// statement names one of them; SELECT * of other statements is unchanged.

// mentionsLineage reports whether a statement's syntax tree names a row
// lineage column.
func mentionsLineage(tree []byte) bool {
	t := bytes.ToLower(tree)
	return bytes.Contains(t, []byte(`"`+iceberg.RowIDColumnName+`"`)) ||
		bytes.Contains(t, []byte(`"`+iceberg.LastUpdatedSequenceNumberColumnName+`"`))
}

// lineageFileColumns read the lineage columns a data file stores (NULL
// when it has none) by their reserved field ids.
var lineageFileColumns = []column{
	{id: iceberg.RowIDFieldID, name: iceberg.RowIDColumnName, typ: "BIGINT"},
	{id: iceberg.LastUpdatedSequenceNumberFieldID, name: iceberg.LastUpdatedSequenceNumberColumnName, typ: "BIGINT"},
}

// lineageColumns is the select list tail of the lineage columns; rl is the
// join of each data file's first_row_id (f) and data sequence number (s).
var lineageColumns = ", COALESCE(d." + quoteIdent(iceberg.RowIDColumnName) + ", rl.f + d.file_row_number) AS " + quoteIdent(iceberg.RowIDColumnName) +
	", COALESCE(d." + quoteIdent(iceberg.LastUpdatedSequenceNumberColumnName) + ", rl.s) AS " + quoteIdent(iceberg.LastUpdatedSequenceNumberColumnName)

// lineageSQL renders the rows of a snapshot like baseSQL, with the row
// lineage columns last.
func (e *Engine) lineageSQL(ctx context.Context, schema *iceberg.Schema, tasks []table.FileScanTask, pins *pinSet) (string, error) {
	return e.scanSQL(ctx, schema, tasks, pins, true)
}

// appendLineageJoin appends the join of each data file read as d (by its
// path, pathOf) with its first_row_id and data sequence number; a file
// without a first_row_id (written before the table was upgraded to v3)
// has no lineage: NULL.
func appendLineageJoin(b *strings.Builder, tasks []table.FileScanTask, pathOf map[string]string) {
	b.WriteString(" JOIN (VALUES ")
	for i, t := range tasks {
		if i > 0 {
			b.WriteString(", ")
		}
		f, s := "NULL", "NULL"
		if t.FirstRowID != nil {
			f = strconv.FormatInt(*t.FirstRowID, 10)
			if t.DataSequenceNumber != nil {
				s = strconv.FormatInt(*t.DataSequenceNumber, 10)
			}
		}
		b.WriteString("(" + sqlString(pathOf[t.File.FilePath()]) + ", CAST(" + f + " AS BIGINT), CAST(" + s + " AS BIGINT))")
	}
	b.WriteString(") AS rl(p, f, s) ON rl.p = d.filename")
}
