package ingest

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// MaxAddFiles bounds the files one AddFiles call registers.
const MaxAddFiles = 100_000

// AddFilesRequest names existing Parquet files to register in a table.
type AddFilesRequest struct {
	Warehouse string
	Table     catalog.Ident
	// Paths are locations of Parquet files, or prefixes ending in "/"
	// under which every *.parquet object is taken (objects under
	// directories whose name starts with "_" or "." are skipped). All
	// must lie inside the table's own location.
	Paths []string
	// Authorize, if set, is called before anything is read; an error stops
	// the call.
	Authorize func() error
}

// AddFiles registers existing Parquet files in an existing table, as one
// append snapshot, without rewriting them: their footers give the row
// counts and column statistics. Each file's schema must be compatible with
// the table's (columns matched by field id, or by name when the file has
// none; a table column a file lacks must be optional). In a partitioned
// table every file must hold one value per partition field, and only
// order-preserving transforms (identity, year, month, day, hour,
// truncate) are supported. A file the table references already is
// refused. Files outside the table's own location are refused (for every
// caller, admins included): a table may reference only files under its
// location, so put the files there first (for example with the write
// credentials that loading the table vends).
func (s *Service) AddFiles(ctx context.Context, req AddFilesRequest) (Result, error) {
	start := time.Now()
	res := Result{Table: req.Table.String(), Mode: Append, Format: Parquet}
	if len(req.Paths) == 0 {
		return res, floe.E(floe.Invalid, "add-files", "no files to add")
	}
	tbl, err := s.lake.LoadTable(ctx, req.Warehouse, req.Table)
	if err != nil {
		return res, err
	}
	if req.Authorize != nil {
		if err := req.Authorize(); err != nil {
			return res, err
		}
	}
	root, err := s.warehouseRoot(ctx, req.Warehouse)
	if err != nil {
		return res, err
	}
	paths, err := s.expand(ctx, root, tbl.Location(), req.Paths)
	if err != nil {
		return res, err
	}
	current, err := lake.CurrentDataFiles(ctx, tbl)
	if err != nil {
		return res, err
	}
	have := map[string]bool{}
	for _, f := range current {
		have[f.FilePath()] = true
	}
	for _, p := range paths {
		if have[p] {
			return res, floe.E(floe.Invalid, "add-files", "%s is already a data file of table %s", p, req.Table)
		}
	}
	files, err := dataFiles(ctx, tbl, paths, nil)
	if err != nil {
		return res, err
	}
	for _, f := range files {
		res.Rows += f.Count()
		res.Bytes += f.FileSizeBytes()
	}
	res.Files = len(files)
	out, err := lake.AppendFiles(ctx, tbl, files, iceberg.Properties{"floe.add-files": fmt.Sprint(len(files))})
	if err != nil {
		return res, err
	}
	if snap := out.CurrentSnapshot(); snap != nil {
		res.SnapshotID = snap.SnapshotID
	}
	res.Seconds = time.Since(start).Seconds()
	s.log.InfoContext(ctx, "ingest: added files", "table", req.Table.String(), "files", res.Files, "rows", res.Rows, "snapshot_id", res.SnapshotID)
	return res, nil
}

// partitionOf gives the partition values of a file (by partition field id)
// when they are not in the file itself (Delta partition columns).
type partitionOf func(path string) (map[int]any, error)

// dataFiles reads the footers of the Parquet files at paths (a few at a
// time) and returns them as data files of tbl's current spec. With part
// set, the partition values come from it instead of the files' statistics.
func dataFiles(ctx context.Context, tbl *table.Table, paths []string, part partitionOf) ([]iceberg.DataFile, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	spec := tbl.Spec()
	statsSpec := spec
	if part != nil {
		statsSpec = *iceberg.UnpartitionedSpec
	}
	out := make([]iceberg.DataFile, len(paths))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	var mu sync.Mutex
	for i, p := range paths {
		g.Go(func() error {
			df, err := table.FileToDataFile(gctx, fsys, p, tbl.Schema(), statsSpec, 0, tbl.Properties())
			if err != nil {
				return floe.Wrap(floe.Invalid, err, "cannot add %s: %s", p, trimMsg(err.Error()))
			}
			if part != nil {
				vals, err := part(p)
				if err != nil {
					return err
				}
				if df, err = withPartition(df, spec, vals); err != nil {
					return fmt.Errorf("ingest: data file %s: %w", p, err)
				}
			}
			mu.Lock()
			out[i] = df
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// withPartition rebuilds df as a data file of spec with partition values vals.
func withPartition(df iceberg.DataFile, spec iceberg.PartitionSpec, vals map[int]any) (iceberg.DataFile, error) {
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, df.FilePath(), df.FileFormat(), vals, nil, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).LowerBoundValues(df.LowerBoundValues()).UpperBoundValues(df.UpperBoundValues()).
		SplitOffsets(df.SplitOffsets())
	return b.Build(), nil
}

// warehouseRoot returns the normalized location of the warehouse.
func (s *Service) warehouseRoot(ctx context.Context, wh string) (string, error) {
	w, err := s.cat.Warehouse(ctx, wh)
	if err != nil {
		return "", err
	}
	root, err := cleanLocation(w.Location)
	if err != nil {
		return "", fmt.Errorf("ingest: warehouse %s: %w", wh, err)
	}
	return root, nil
}

// cleanLocation normalizes a storage location scheme://bucket/key: the
// scheme lower-cased (s3a and s3n are s3), repeated and trailing slashes
// and "." segments dropped. The key is taken literally (object keys may
// hold "%", "?" or "#"). It refuses a location with a ".." segment.
func cleanLocation(loc string) (string, error) {
	scheme, rest, ok := strings.Cut(loc, "://")
	host, key, _ := strings.Cut(rest, "/")
	if !ok || scheme == "" || host == "" || strings.ContainsAny(scheme, "/?#") {
		return "", floe.E(floe.Invalid, "location", "%q is not a storage location (s3://bucket/key)", loc)
	}
	var segs []string
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "..":
			return "", floe.E(floe.Invalid, "location", "location %q must not contain \"..\"", loc)
		case "", ".":
			continue
		}
		segs = append(segs, seg)
	}
	scheme = strings.ToLower(scheme)
	if scheme == "s3a" || scheme == "s3n" {
		scheme = "s3"
	}
	out := scheme + "://" + host
	if len(segs) > 0 {
		out += "/" + strings.Join(segs, "/")
	}
	return out, nil
}

// inside normalizes loc and requires it inside root (not root itself).
func inside(root, loc string) (string, error) {
	n, err := cleanLocation(loc)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(n, root+"/") {
		return "", floe.E(floe.Invalid, "location", "%s is outside the warehouse storage (%s)", loc, root)
	}
	return n, nil
}

// expand checks each path (inside the warehouse root and the table
// location tableLoc) and replaces a prefix (ending in "/") by the Parquet
// objects under it.
func (s *Service) expand(ctx context.Context, root, tableLoc string, paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) error {
		if seen[p] {
			return nil
		}
		if len(out) >= MaxAddFiles {
			return floe.E(floe.Invalid, "add-files", "more than %d files", MaxAddFiles)
		}
		seen[p] = true
		out = append(out, p)
		return nil
	}
	for _, p := range paths {
		n, err := inside(root, p)
		if err != nil {
			return nil, err
		}
		if !catalog.Within(tableLoc, n) {
			return nil, catalog.OutsideError(floe.Invalid, "path", p, tableLoc)
		}
		if !strings.HasSuffix(p, "/") {
			if !strings.HasSuffix(strings.ToLower(n), ".parquet") {
				return nil, floe.E(floe.Invalid, "add-files", "%s is not a .parquet file (end a prefix with /)", p)
			}
			if err := add(n); err != nil {
				return nil, err
			}
			continue
		}
		found, err := s.list(ctx, n, func(rel string) bool {
			for _, seg := range strings.Split(path.Dir(rel), "/") {
				if seg != "." && (strings.HasPrefix(seg, "_") || strings.HasPrefix(seg, ".")) {
					return false
				}
			}
			base := path.Base(rel)
			return strings.HasSuffix(strings.ToLower(base), ".parquet") && !strings.HasPrefix(base, ".") && !strings.HasPrefix(base, "_")
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, floe.E(floe.Invalid, "add-files", "no .parquet files under %s", p)
		}
		for _, f := range found {
			if err := add(f); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// list returns the objects under the directory dir (a normalized
// location) whose path relative to dir keep accepts, in key order.
func (s *Service) list(ctx context.Context, dir string, keep func(rel string) bool) ([]string, error) {
	l, err := s.listable()
	if err != nil {
		return nil, err
	}
	var out []string
	err = l.WalkDir(dir, func(loc string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d != nil && d.IsDir() {
			return nil
		}
		n, err := cleanLocation(loc)
		if err != nil {
			return nil
		}
		rel, ok := strings.CutPrefix(n, dir+"/")
		if ok && keep(rel) {
			out = append(out, n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: list %s: %w", dir, err)
	}
	slices.Sort(out)
	return out, nil
}
