// Package lake is Floe's in-process Iceberg writer: Floe's own jobs (the
// system.audit export now; ingest, import and compaction later) write
// Parquet data files and commit snapshots with iceberg-go and arrow-go,
// without going through HTTP.
//
// A Lake opens a Floe table as an iceberg-go *table.Table whose catalog is
// the Floe catalog itself (its commits are catalog.Catalog.CommitTable
// calls, so they are validated and swapped exactly like a REST client's)
// and whose files are read and written through an iceberg-go FileIO over
// Floe's object storage: BucketFS streams into the embedded object store,
// NewS3FS uses iceberg-go's S3 FileIO with the server's own AWS
// configuration for external S3.
//
// Writes are two steps: WriteDataFiles writes Parquet files (nothing is
// visible yet), then AppendFiles commits them as one snapshot. A commit
// that loses a race with a concurrent writer (iceberg-go's
// table.ErrCommitFailed, the catalog's Conflict) is never forced: the table
// is reloaded and the files are added on top of the new current snapshot,
// so no concurrent commit is ever undone. Append does both steps.
package lake
