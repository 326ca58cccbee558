// Command compaction benchmarks Floe's compaction (issue 6): it writes N
// small data files (default 10,000 of about 100 KB) into one table of a
// fresh data directory, measures the disk's raw sequential write rate with a
// write+fsync loop in the same directory, then compacts the table into
// 512 MiB files in a child process and reports the time, MB/s and the
// child's peak RSS.
//
//	go run ./bench/compaction -dir /tmp/cbench [-files 10000] [-file-kb 100]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/maint"
)

var id = catalog.Ident{Namespace: catalog.Namespace{"bench"}, Name: "small"}

func main() {
	dir := flag.String("dir", "", "data directory (created; must not exist)")
	files := flag.Int("files", 10000, "small files to write")
	fileKB := flag.Int("file-kb", 100, "size of each small file, KB")
	phase := flag.String("phase", "all", "all, or compact (the child)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "-dir is required")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch *phase {
	case "compact":
		err = compact(ctx, *dir)
	default:
		err = all(ctx, *dir, *files, *fileKB)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func open(ctx context.Context, dir string) (*app.App, *maint.Env, error) {
	cfg := app.Defaults()
	cfg.DataDir, cfg.Maintenance, cfg.AuditExportInterval, cfg.S3Listen = dir, false, 0, "off"
	a, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	lk := lake.New(a.Catalog(), lake.NewBucketFS(a.Objects()), lake.Options{})
	return a, &maint.Env{Tables: a.Catalog(), Lake: lk,
		Policies: maint.Resolver{Namespaces: a.Catalog(), Base: maint.DefaultPolicy(maint.Retention{})}}, nil
}

func all(ctx context.Context, dir string, files, fileKB int) error {
	a, env, err := open(ctx, dir)
	if err != nil {
		return err
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "payload", Type: iceberg.PrimitiveTypes.String, Required: true})
	if err := a.Catalog().CreateNamespace(ctx, "floe", id.Namespace, nil); err != nil {
		return err
	}
	if _, err := a.Catalog().CreateTable(ctx, "floe", id.Namespace, catalog.CreateTableRequest{Name: id.Name, Schema: sc}); err != nil {
		return err
	}
	tbl, err := env.Lake.LoadTable(ctx, "floe", id)
	if err != nil {
		return err
	}
	// One file per batch: rows of 128 hex characters (about 70 bytes each
	// once Parquet has compressed them), fileKB KB per file.
	rowsPerFile := fileKB * 1024 / 70
	start := time.Now()
	var dfs []iceberg.DataFile
	var rowID int64
	for len(dfs) < files {
		n := min(500, files-len(dfs))
		rdr, err := batches(tbl, n, rowsPerFile, &rowID)
		if err != nil {
			return err
		}
		// Target size 1 byte: every batch goes to its own file.
		txnTbl := withTarget(tbl, 1)
		out, err := lake.WriteDataFiles(ctx, txnTbl, rdr)
		rdr.Release()
		if err != nil {
			return err
		}
		dfs = append(dfs, out...)
	}
	if _, err := lake.AppendFiles(ctx, tbl, dfs, nil); err != nil {
		return err
	}
	var bytes int64
	for _, f := range dfs {
		bytes += f.FileSizeBytes()
	}
	fmt.Printf("setup: %d files, %d rows, %.1f MB (avg %.1f KB) in %s\n", len(dfs), rowID, float64(bytes)/1e6,
		float64(bytes)/float64(len(dfs))/1e3, time.Since(start).Round(time.Millisecond))
	if err := a.Close(ctx); err != nil {
		return err
	}

	ddSize := max(bytes, 256<<20)
	rate, err := diskRate(dir, ddSize)
	if err != nil {
		return err
	}
	fmt.Printf("disk: raw sequential write+fsync of %.1f MB: %.1f MB/s\n", float64(ddSize)/1e6, rate)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-dir", dir, "-phase", "compact")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start = time.Now()
	if err := cmd.Run(); err != nil {
		return err
	}
	took := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	fmt.Printf("compaction: %.1f MB in %s = %.1f MB/s (%.0f%% of the raw write rate); peak RSS %.0f MiB; cpu user %s sys %s\n",
		float64(bytes)/1e6, took.Round(time.Millisecond), float64(bytes)/1e6/took.Seconds(),
		100*float64(bytes)/1e6/took.Seconds()/rate, float64(ru.Maxrss)/1024,
		time.Duration(ru.Utime.Nano()).Round(time.Millisecond), time.Duration(ru.Stime.Nano()).Round(time.Millisecond))
	return nil
}

// withTarget returns tbl with write.target-file-size-bytes set (for writing only).
func withTarget(tbl *table.Table, size int64) *table.Table {
	b, _ := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	_ = b.SetProperties(iceberg.Properties{table.WriteTargetFileSizeBytesKey: fmt.Sprint(size)})
	md, _ := b.Build()
	return table.New(tbl.Identifier(), md, tbl.MetadataLocation(), tbl.FS, nil)
}

// batches returns n record batches of rows rows each.
func batches(tbl *table.Table, n, rows int, next *int64) (array.RecordReader, error) {
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	var recs []arrow.RecordBatch
	buf := make([]byte, 64)
	for range n {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		for range rows {
			_, _ = rand.Read(buf)
			b.Field(0).(*array.Int64Builder).Append(*next)
			b.Field(1).(*array.StringBuilder).Append(hex.EncodeToString(buf))
			*next++
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return array.NewRecordReader(asc, recs)
}

// compact is the child: it compacts the table and reports.
func compact(ctx context.Context, dir string) error {
	a, env, err := open(ctx, dir)
	if err != nil {
		return err
	}
	defer a.Close(ctx)
	start := time.Now()
	rep, err := maint.NewCompact(env).CompactTable(ctx, "floe", id, false)
	if err != nil {
		return err
	}
	fmt.Printf("compact: %s in %s\n", rep.Summary, time.Since(start).Round(time.Millisecond))
	return nil
}

// diskRate writes size bytes in 1 MiB blocks to a file
// in dir, fsyncs, and returns MB/s.
func diskRate(dir string, size int64) (float64, error) {
	p := filepath.Join(dir, "ddtest")
	f, err := os.Create(p)
	if err != nil {
		return 0, err
	}
	defer os.Remove(p)
	block := make([]byte, 1<<20)
	_, _ = rand.Read(block)
	start := time.Now()
	for w := int64(0); w < size; w += int64(len(block)) {
		if _, err := f.Write(block); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return float64(size) / 1e6 / time.Since(start).Seconds(), nil
}
