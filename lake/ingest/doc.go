// Package ingest loads data into Floe's Iceberg tables: CSV, NDJSON,
// Parquet and Arrow IPC (file and stream) inputs are read as Arrow record
// batches with bounded memory, their schema is inferred (or given), and
// they are written as Parquet data files of a new table (created with an
// optional partition spec) or appended to, or overwrite, an existing one.
//
// It also joins data that already lives in the warehouse storage to the
// lake without copying it: AddFiles registers existing Parquet files in a
// table, and RegisterDelta exposes a Delta Lake table (its _delta_log) as
// an Iceberg table whose metadata references the same Parquet files.
//
// Streamer buffers rows sent in small requests (micro-batches) per table
// and commits them every so many seconds or rows.
//
// Every write goes through package lake: data files are written first,
// then committed as one snapshot through the Floe catalog; a failure
// before the commit leaves nothing visible (the files written are removed,
// and a table created for the load is dropped again).
package ingest
