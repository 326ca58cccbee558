package auditexport

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/lake"
)

// Defaults of the incremental compaction (Options.Compact...).
const (
	// DefaultCompactMinFiles is how many small files a day's partition
	// must have before they are compacted.
	DefaultCompactMinFiles = 16
	// DefaultCompactGroupFiles bounds the files one rewrite group reads.
	DefaultCompactGroupFiles = 64
	// DefaultCompactGroupBytes bounds the input bytes of one rewrite group.
	DefaultCompactGroupBytes = 64 << 20
	// DefaultCompactGroups bounds the groups one compaction rewrites.
	DefaultCompactGroups = 4
	// DefaultCompactSmallBytes: files smaller than this are small.
	DefaultCompactSmallBytes = 16 << 20
	// DefaultCompactTierBytes bounds the first size tier of small files.
	DefaultCompactTierBytes = 256 << 10
	// DefaultCompactWindow: only partitions of days within this of now
	// are looked at.
	DefaultCompactWindow = 48 * time.Hour
)

// compactJob marks the compaction snapshots in their summary.
const compactJob = "audit-compact"

// CompactResult says what one Compact did.
type CompactResult struct {
	// Groups is how many groups were rewritten.
	Groups int
	// FilesBefore and FilesAfter count the data files replaced and written.
	FilesBefore, FilesAfter int
	// BytesBefore and BytesAfter are their sizes.
	BytesBefore, BytesAfter int64
}

// compactGroupOptions make a rewrite stream with little memory: one
// reader, small Arrow batches, two batches buffered. Audit rows are about
// 550 bytes, so a batch is about 2 MiB.
var compactGroupOptions = []table.CompactionGroupOption{
	table.WithCompactionScanConcurrency(1),
	table.WithCompactionArrowBatchSize(4096),
	table.WithCompactionRecordBatchBufferSize(2),
	table.WithCompactionParquetRowGroupLimit(64 << 10),
}

// Compact rewrites the recent small files of system.audit into larger
// ones, incrementally: it plans only the partitions (days) within
// CompactWindow of now, picks the files smaller than CompactSmallBytes of
// partitions with at least CompactMinFiles of them, and rewrites at most
// CompactGroups groups of at most CompactGroupFiles files and
// CompactGroupBytes input bytes each, streaming, in one replace snapshot.
// Files are compacted only with files of their size tier (CompactTierBytes),
// so the output of one compaction is not rewritten by the next: the cost of
// compaction per exported record stays constant as the day's data grows.
// Older partitions and large files are never read, so the work and the
// memory are bounded whatever the history's length. The generic
// maintenance compaction is off for system.audit (TableProperties).
func (e *Exporter) Compact(ctx context.Context) (CompactResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.compactOnce(ctx)
}

func (e *Exporter) compactOnce(ctx context.Context) (CompactResult, error) {
	var res CompactResult
	tbl, err := e.lk.LoadTable(ctx, e.wh, Ident())
	if floe.KindOf(err) == floe.NotFound {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("audit compact: load %s: %w", Ident(), err)
	}
	if tbl.CurrentSnapshot() == nil {
		return res, nil
	}
	groups, err := e.plan(ctx, tbl)
	if err != nil || len(groups) == 0 {
		return res, err
	}
	var results []table.CompactionGroupResult
	discard := func() {
		for _, gr := range results {
			lake.RemoveFiles(ctx, tbl, gr.NewDataFiles)
		}
	}
	for _, g := range groups {
		gr, err := table.ExecuteCompactionGroup(ctx, tbl, g, compactGroupOptions...)
		if err != nil {
			lake.RemoveFiles(ctx, tbl, gr.NewDataFiles)
			discard()
			return res, fmt.Errorf("audit compact: rewrite group %q: %w", g.PartitionKey, err)
		}
		results = append(results, gr)
		res.Groups++
		res.FilesBefore += len(gr.OldDataFiles)
		res.FilesAfter += len(gr.NewDataFiles)
		res.BytesBefore += g.TotalSizeBytes
		res.BytesAfter += gr.BytesAfter
	}
	txn := tbl.NewTransaction()
	rw := txn.NewRewrite(iceberg.Properties{"floe.maintenance": compactJob})
	for _, gr := range results {
		rw.ApplyResult(gr)
	}
	if err := rw.Commit(ctx); err != nil {
		discard()
		return res, fmt.Errorf("audit compact: stage rewrite: %w", err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		if errors.Is(err, table.ErrCommitFailed) || errors.Is(err, table.ErrCommitDiverged) {
			discard() // nothing was committed; the next run plans again
		}
		return res, fmt.Errorf("audit compact: commit: %w", err)
	}
	return res, nil
}

// plan returns the rewrite groups of the recent small files of tbl.
func (e *Exporter) plan(ctx context.Context, tbl *table.Table) ([]table.CompactionTaskGroup, error) {
	cutoff := e.now().Add(-e.copts.Window).UTC()
	day := time.Date(cutoff.Year(), cutoff.Month(), cutoff.Day(), 0, 0, 0, 0, time.UTC)
	filter := iceberg.GreaterThanEqual(iceberg.Reference("time"), iceberg.Timestamp(day.UnixMicro()))
	tasks, err := tbl.Scan(table.WithRowFilter(filter)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit compact: plan: %w", err)
	}
	tasks = lake.WholeFiles(tasks)
	parts := map[string][]table.FileScanTask{}
	var keys []string
	for _, t := range tasks {
		f := t.File
		if f.ContentType() != iceberg.EntryContentData || f.FileSizeBytes() >= e.copts.SmallBytes || len(t.DeleteFiles) > 0 {
			continue
		}
		k := fmt.Sprintf("%d/%v/%d", f.SpecID(), f.Partition(), sizeTier(f.FileSizeBytes(), e.copts.TierBytes))
		if _, ok := parts[k]; !ok {
			keys = append(keys, k)
		}
		parts[k] = append(parts[k], t)
	}
	// Newest days first, roughly (their keys sort last), and within a day
	// the smallest files first.
	slices.SortFunc(keys, func(a, b string) int {
		pa, ta := splitTier(a)
		pb, tb := splitTier(b)
		if c := cmp.Compare(pb, pa); c != 0 {
			return c
		}
		return cmp.Compare(ta, tb)
	})
	var groups []table.CompactionTaskGroup
	for _, k := range keys {
		ts := parts[k]
		if len(ts) < e.copts.MinFiles {
			continue
		}
		// Oldest records first, so that a group holds neighbouring seqs.
		slices.SortFunc(ts, func(a, b table.FileScanTask) int { return cmp.Compare(lowerSeq(a.File), lowerSeq(b.File)) })
		var g table.CompactionTaskGroup
		flush := func() {
			if len(g.Tasks) >= 2 && len(groups) < e.copts.Groups {
				groups = append(groups, g)
			}
			g = table.CompactionTaskGroup{PartitionKey: k}
		}
		g.PartitionKey = k
		for _, t := range ts {
			if len(g.Tasks) > 0 && (len(g.Tasks) >= e.copts.GroupFiles || g.TotalSizeBytes+t.File.FileSizeBytes() > e.copts.GroupBytes) {
				flush()
			}
			g.Tasks = append(g.Tasks, t)
			g.TotalSizeBytes += t.File.FileSizeBytes()
		}
		flush()
		if len(groups) >= e.copts.Groups {
			break
		}
	}
	return groups, nil
}

// sizeTier is the size tier of a file of size bytes: 0 below tierBytes,
// then one more for each factor of four.
func sizeTier(size, tierBytes int64) int {
	t := 0
	for lim := tierBytes; size >= lim && t < 32; lim *= 4 {
		t++
	}
	return t
}

// splitTier splits a planning key into its partition and its size tier.
func splitTier(k string) (string, int) {
	i := strings.LastIndexByte(k, '/')
	t, _ := strconv.Atoi(k[i+1:])
	return k[:i], t
}

// seqFieldID is the field id of seq in Schema.
const seqFieldID = 1

// lowerSeq is the smallest seq in f by its column statistics (0 without).
func lowerSeq(f iceberg.DataFile) int64 {
	if b, ok := f.LowerBoundValues()[seqFieldID]; ok && len(b) == 8 {
		return int64(binary.LittleEndian.Uint64(b))
	}
	return 0
}

// upperSeq is the largest seq in f by its column statistics.
func upperSeq(f iceberg.DataFile) (int64, bool) {
	if b, ok := f.UpperBoundValues()[seqFieldID]; ok && len(b) == 8 {
		return int64(binary.LittleEndian.Uint64(b)), true
	}
	return 0, false
}
