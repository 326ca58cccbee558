// Package auditexport exports Floe's audit log continually as the Iceberg
// table system.audit of the default warehouse, so that any engine can read
// it (Spark, Trino, DuckDB, PyIceberg), governed like any other table.
//
// Every interval, the Exporter appends the records newer than its
// watermark, up to BatchSize per commit. The watermark is the snapshot
// summary property floe.audit.last-seq of the table's current snapshot:
// the records and the watermark move in the same commit, and the commit
// asserts that the table's main branch is still the snapshot the watermark
// was read from. A node that loses that race (another node exported first)
// removes its files, reloads and starts again from the new watermark, so
// every record is exported exactly once, in seq order, however many nodes
// export at the same time. To save the wasted work, nodes sharing a store
// also take turns through a lease (when Options.Leases is set): only the
// holder exports.
//
// The table is created on the first export that has records to write, with
// the namespace system. Its rows are the audit records as stored, hashes
// included, so a reader can re-verify the chain from the table alone. The
// audit log holds no secrets by design (see package audit), so neither does
// the table.
package auditexport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/maint"
)

// Where the export lives and how its snapshots are marked.
const (
	// TableName is the table's name in Namespace.
	TableName = "audit"
	// WatermarkProperty is the snapshot summary property holding the seq of
	// the last record exported up to and including that snapshot.
	WatermarkProperty = "floe.audit.last-seq"
	// FirstSeqProperty is the snapshot summary property holding the seq of
	// the first record the snapshot added.
	FirstSeqProperty = "floe.audit.first-seq"
	// LeaseName is the store lease nodes take turns exporting under.
	LeaseName = "audit/export"
)

// Defaults of Options.
const (
	DefaultInterval = 10 * time.Second
	// DefaultBatchSize is the most records one commit adds.
	DefaultBatchSize = 10_000
	// DefaultBatchBytes bounds the records one commit holds in memory (by
	// their stored size); the Arrow and Parquet forms of a batch add about
	// as much again.
	DefaultBatchBytes = 8 << 20
	// MaxBatchSize and MaxBatchBytes cap what Options may ask for.
	MaxBatchSize  = 100_000
	MaxBatchBytes = 64 << 20
)

// readPage is how many records one read from the source asks for.
const readPage = 1000

// Namespace is the namespace of system tables.
func Namespace() catalog.Namespace { return catalog.Namespace{"system"} }

// Ident is the identifier of the export table, system.audit.
func Ident() catalog.Ident { return catalog.Ident{Namespace: Namespace(), Name: TableName} }

// Source is where the records come from (the metadata store).
type Source interface {
	// AuditRecords returns up to limit records with Seq > after, in Seq order.
	AuditRecords(ctx context.Context, after int64, limit int) ([]audit.Record, error)
}

// Catalog creates the namespace and table on first use (*catalog.Catalog).
type Catalog interface {
	CreateNamespace(ctx context.Context, wh string, ns catalog.Namespace, props map[string]string) error
	CreateTable(ctx context.Context, wh string, ns catalog.Namespace, req catalog.CreateTableRequest) (*catalog.TableState, error)
}

// Options configures an Exporter. Zero values mean defaults.
type Options struct {
	// Warehouse holds system.audit. Required.
	Warehouse string
	// Interval is the time between exports (default DefaultInterval).
	Interval time.Duration
	// BatchSize is the most records one commit adds (default
	// DefaultBatchSize, at most MaxBatchSize).
	BatchSize int
	// BatchBytes bounds the stored size of the records one commit adds,
	// and so the memory an export holds (default DefaultBatchBytes, at
	// most MaxBatchBytes). A batch always has at least one record.
	BatchBytes int64
	// Leases, if set, makes nodes sharing the store take turns: a node
	// exports only while it holds the lease LeaseName. Correctness does not
	// depend on it (see the package documentation).
	Leases maint.Leases
	// Node names this node as the lease holder (default hostname-<random>).
	Node string
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Compact bounds the incremental compaction that follows every
	// background export (see Exporter.Compact); zero fields mean defaults.
	Compact CompactOptions
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Wake, if set, starts a background export before the interval has
	// passed (audit.Tail.Ready: enough records for a batch are waiting).
	Wake <-chan struct{}
	// Observe, if set, is told the outcome of every background export
	// (for metrics).
	Observe func(Result, error)
}

// CompactOptions bounds the incremental compaction. Zero values mean the
// Default... constants.
type CompactOptions struct {
	// MinFiles is how many small files a partition needs to be compacted.
	MinFiles int
	// GroupFiles and GroupBytes bound the files and input bytes of one
	// rewrite group; Groups bounds the groups of one compaction.
	GroupFiles int
	GroupBytes int64
	Groups     int
	// SmallBytes: files smaller than this are small.
	SmallBytes int64
	// TierBytes is the size below which a small file is in the first
	// size tier; each further tier holds files up to four times larger.
	// Only files of one tier are compacted together, so a file already
	// compacted is not read again until MinFiles files of its size have
	// gathered: each record is rewritten a few times at most, however long
	// the export runs.
	TierBytes int64
	// Window: only partitions (days) within this of now are planned.
	Window time.Duration
}

func (o CompactOptions) withDefaults() CompactOptions {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MinFiles, DefaultCompactMinFiles)
	o.MinFiles = max(o.MinFiles, 2)
	def(&o.GroupFiles, DefaultCompactGroupFiles)
	o.GroupFiles = max(o.GroupFiles, 2)
	def64(&o.GroupBytes, DefaultCompactGroupBytes)
	def(&o.Groups, DefaultCompactGroups)
	def64(&o.SmallBytes, DefaultCompactSmallBytes)
	def64(&o.TierBytes, DefaultCompactTierBytes)
	if o.Window <= 0 {
		o.Window = DefaultCompactWindow
	}
	return o
}

// Result says what one Export did.
type Result struct {
	// Records is how many records were appended.
	Records int64
	// Commits is how many snapshots were committed.
	Commits int
	// LastSeq is the watermark afterwards: every record up to it is in the table.
	LastSeq int64
}

// Exporter appends the audit log to system.audit.
type Exporter struct {
	src      Source
	cat      Catalog
	lk       *lake.Lake
	wh       string
	interval time.Duration
	batch    int
	bytes    int64
	leases   maint.Leases
	node     string
	log      *slog.Logger
	copts    CompactOptions
	observe  func(Result, error)
	now      func() time.Time
	wake     <-chan struct{}

	mu sync.Mutex // serializes Export calls of this node
	// buf is the buffer batches are read into (see records); mu guards it.
	buf []audit.Record
	// alloc holds the Arrow buffers of one batch for the next (toArrow).
	alloc *batchAllocator
	// compacted is when the background loop last compacted (zero: never;
	// only the loop goroutine uses it). A stream that ended early (Flush)
	// does not compact again before an interval has passed: each
	// compaction plans the recent files anew.
	compacted time.Time
	// flush ends a background stream's wait (Flush).
	flush chan struct{}

	// life guards stop, done and started (not mu: Close must not wait for
	// a stream, which holds mu, to end by itself).
	life    sync.Mutex
	stop    context.CancelFunc
	done    chan struct{}
	started bool
}

// New returns an Exporter reading src and writing through cat and lk.
func New(src Source, cat Catalog, lk *lake.Lake, o Options) *Exporter {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	o.BatchSize = min(o.BatchSize, MaxBatchSize)
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	o.BatchBytes = min(o.BatchBytes, MaxBatchBytes)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Node == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "floe"
		}
		o.Node = fmt.Sprintf("%s-%08x", host, rand.Uint32())
	}
	return &Exporter{src: src, cat: cat, lk: lk, wh: o.Warehouse, interval: o.Interval, batch: o.BatchSize,
		bytes: o.BatchBytes, copts: o.Compact.withDefaults(), observe: o.Observe, now: o.Now, leases: o.Leases, node: o.Node, log: o.Logger,
		wake: o.Wake, alloc: newBatchAllocator(2 * o.BatchBytes), flush: make(chan struct{}, 1)}
}

// Start exports every interval in the background until Close.
func (e *Exporter) Start() {
	e.life.Lock()
	defer e.life.Unlock()
	if e.started {
		return
	}
	e.started = true
	ctx, stop := context.WithCancel(context.Background())
	e.stop, e.done = stop, make(chan struct{})
	go e.loop(ctx)
}

// Close stops the background exports, cancelling one that runs, and waits
// for it to end.
func (e *Exporter) Close() error {
	e.life.Lock()
	stop, done := e.stop, e.done
	e.life.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	<-done
	return nil
}

func (e *Exporter) loop(ctx context.Context) {
	defer close(e.done)
	t := time.NewTimer(e.interval)
	defer t.Stop()
	ended := time.Now() // when the last stream ended
	for {
		// The tick (no wake for a whole interval: little load) appends
		// what is waiting now. A wake (a batch is waiting: load) starts a
		// stream that goes on reading until an interval after the last one
		// ended, so that a busy interval makes one commit.
		deadline := time.Time{}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.wake: // nil: never
			deadline = ended.Add(e.interval)
		}
		var res Result
		var err error
		pprof.Do(ctx, profileLabels, func(ctx context.Context) { res, err = e.exportLeased(ctx, deadline) })
		ended = time.Now()
		t.Reset(e.interval) // no stale tick: timers since Go 1.23 drop it on Reset
		if e.observe != nil && ctx.Err() == nil {
			e.observe(res, err)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			e.log.WarnContext(ctx, "audit export failed; retrying next interval", "err", err)
		case res.Records > 0:
			e.log.DebugContext(ctx, "audit records exported", "table", Ident().String(), "records", res.Records,
				"commits", res.Commits, "last_seq", res.LastSeq)
		}
	}
}

// profileLabels mark the background export's CPU in profiles: the
// goroutines it starts (the Parquet writers, the compaction's readers)
// inherit them, so `go tool pprof -tagfocus floe=audit-export` shows all
// of its cost, also what runs outside its own stack.
var profileLabels = pprof.Labels("floe", "audit-export")

// compactLabels mark the compaction that follows an export likewise
// (floe=audit-compact).
var compactLabels = pprof.Labels("floe", "audit-compact")

// leaseTTL is how long the export lease outlives a node that died holding it.
func (e *Exporter) leaseTTL() time.Duration {
	return min(max(2*e.interval, 30*time.Second), 5*time.Minute)
}

// exportLeased streams the records stored until deadline (see stream),
// then compacts the recent small files (at most once per interval), while
// holding the lease, if there are leases.
func (e *Exporter) exportLeased(ctx context.Context, deadline time.Time) (Result, error) {
	if e.leases == nil {
		res, err := e.stream(ctx, deadline, nil)
		if err == nil {
			e.compactDue(ctx)
		}
		return res, err
	}
	ttl := e.leaseTTL()
	l, ok, err := e.leases.AcquireLease(ctx, LeaseName, e.node, ttl)
	if err != nil {
		return Result{}, fmt.Errorf("audit export lease: %w", err)
	}
	if !ok {
		return Result{}, nil // another node is exporting
	}
	defer func() {
		if err := e.leases.ReleaseLease(context.WithoutCancel(ctx), l); err != nil {
			e.log.DebugContext(ctx, "audit export lease was lost", "err", err)
		}
	}()
	res, err := e.stream(ctx, deadline, func() error { return e.leases.RenewLease(ctx, l, ttl) })
	if err == nil && e.leases.RenewLease(ctx, l, ttl) == nil {
		e.compactDue(ctx)
	}
	return res, err
}

// compactDue compacts unless the loop compacted less than an interval ago.
func (e *Exporter) compactDue(ctx context.Context) {
	now := e.now()
	if !e.compacted.IsZero() && now.Sub(e.compacted) < e.interval {
		return
	}
	e.compacted = now
	pprof.Do(ctx, compactLabels, e.compactLogged)
}

// compactLogged runs Compact, logging what it did.
func (e *Exporter) compactLogged(ctx context.Context) {
	cr, err := e.Compact(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		e.log.WarnContext(ctx, "audit export compaction failed; retrying next interval", "err", err)
	case cr.Groups > 0:
		e.log.DebugContext(ctx, "audit export compacted", "table", Ident().String(), "groups", cr.Groups,
			"files_before", cr.FilesBefore, "files_after", cr.FilesAfter)
	}
}

// Export appends every record not yet in system.audit, creating the table
// if needed, in commits of at most BatchSize records. A background stream
// that is waiting for more records commits what it has first (Flush).
func (e *Exporter) Export(ctx context.Context) (Result, error) {
	e.Flush()
	return e.export(ctx, nil)
}

// maxConflicts bounds how often in a row one Export may lose a commit race.
const maxConflicts = 20

func (e *Exporter) export(ctx context.Context, between func() error) (Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exportLocked(ctx, between)
}

// exportLocked is export with e.mu held.
func (e *Exporter) exportLocked(ctx context.Context, between func() error) (Result, error) {
	var res Result
	tbl, err := e.table(ctx)
	if err != nil || tbl == nil {
		return res, err
	}
	conflicts := 0
	for {
		last, err := Watermark(ctx, tbl)
		if err != nil {
			return res, err
		}
		res.LastSeq = last
		recs, full, err := e.records(ctx, last)
		if err != nil {
			return res, err
		}
		if len(recs) == 0 {
			return res, nil
		}
		next, err := e.commit(ctx, tbl, recs)
		n, lastSeq := len(recs), recs[len(recs)-1].Seq
		e.release(recs)
		if errors.Is(err, table.ErrCommitFailed) {
			conflicts++
			if conflicts > maxConflicts {
				return res, fmt.Errorf("audit export: lost %d commit races in a row: %w", conflicts, err)
			}
			e.log.DebugContext(ctx, "audit export: another writer committed first; reloading", "err", err)
			if tbl, err = lake.Reload(ctx, tbl); err != nil {
				return res, err
			}
			continue
		}
		if err != nil {
			return res, err
		}
		tbl, conflicts = next, 0
		res.Records += int64(n)
		res.Commits++
		res.LastSeq = lastSeq
		if !full {
			return res, nil
		}
		if between != nil {
			if err := between(); err != nil {
				return res, fmt.Errorf("audit export lease: %w", err)
			}
		}
	}
}

// records reads one batch of records after seq last: at most BatchSize
// records and, past the first, at most BatchBytes of them. full reports
// that the batch stopped at a bound, so more records may follow. The batch
// is read into the exporter's buffer (e.buf), which release empties after
// the batch's commit: its capacity, BatchSize records, is kept for the next
// batch, so that batches cost no allocation of their own when the source
// appends (audit.Tail).
func (e *Exporter) records(ctx context.Context, last int64) (recs []audit.Record, full bool, err error) {
	if e.buf == nil {
		e.buf = make([]audit.Record, 0, e.batch)
	}
	var size int64
	recs = e.buf[:0]
	for len(recs) < e.batch && size < e.bytes {
		n := min(readPage, e.batch-len(recs))
		start := len(recs)
		if recs, err = e.read(ctx, recs, last, n); err != nil {
			e.release(recs)
			return nil, false, fmt.Errorf("audit export: read records after %d: %w", last, err)
		}
		got := len(recs) - start
		for i := start; i < len(recs); i++ {
			if i > 0 && size+RecordSize(recs[i]) > e.bytes {
				clear(recs[i:]) // not kept: let the strings go
				return recs[:i], true, nil
			}
			size += RecordSize(recs[i])
		}
		if got < n {
			return recs, false, nil
		}
		last = recs[len(recs)-1].Seq
	}
	return recs, true, nil
}

// appendSource is a Source that appends the records to a slice it is
// given (audit.Tail), sparing the export a copy and an allocation per read.
type appendSource interface {
	AppendAuditRecords(ctx context.Context, dst []audit.Record, after int64, limit int) ([]audit.Record, error)
}

// read appends to dst up to limit records after seq after from the source.
func (e *Exporter) read(ctx context.Context, dst []audit.Record, after int64, limit int) ([]audit.Record, error) {
	if as, ok := e.src.(appendSource); ok {
		return as.AppendAuditRecords(ctx, dst, after, limit)
	}
	rs, err := e.src.AuditRecords(ctx, after, limit)
	return append(dst, rs...), err
}

// release lets go of the records of a batch read by records (their
// strings are not held until the next batch) and keeps the buffer.
func (e *Exporter) release(recs []audit.Record) {
	clear(recs)
	if cap(recs) <= e.batch {
		e.buf = recs[:0]
	}
}

// RecordSize is the size of r as the export counts it against BatchBytes:
// its text and detail bytes plus a fixed overhead for the rest.
func RecordSize(r audit.Record) int64 {
	return int64(64 + r.TextBytes())
}

// commit writes recs as data files and appends them in one snapshot that
// carries the new watermark, asserting that main is still the snapshot
// the watermark was read from. On table.ErrCommitFailed nothing was
// committed and the files are removed.
func (e *Exporter) commit(ctx context.Context, tbl *table.Table, recs []audit.Record) (*table.Table, error) {
	rec, err := e.arrowBatch(tbl, recs)
	if err != nil {
		return nil, err
	}
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		return nil, fmt.Errorf("audit export: %w", err)
	}
	files, err := lake.WriteDataFiles(ctx, tbl, rdr)
	rdr.Release()
	if err != nil {
		return nil, err
	}
	return e.commitFiles(ctx, tbl, files, recs[0].Seq, recs[len(recs)-1].Seq)
}

// arrowBatch builds the Arrow batch of recs, which must be contiguous, with the
// exporter's allocator.
func (e *Exporter) arrowBatch(tbl *table.Table, recs []audit.Record) (arrow.RecordBatch, error) {
	for i := 1; i < len(recs); i++ {
		if recs[i].Seq != recs[i-1].Seq+1 {
			return nil, floe.E(floe.Internal, "audit", "audit records are not contiguous: %d follows %d", recs[i].Seq, recs[i-1].Seq)
		}
	}
	e.alloc.recycle() // the batch before the previous one is written
	return toArrow(e.alloc, tbl.Schema(), recs)
}

// table loads system.audit, creating the namespace and the table when they
// do not exist yet and there are records to export. It returns nil when
// there is no table and nothing to export.
func (e *Exporter) table(ctx context.Context) (*table.Table, error) {
	tbl, err := e.lk.LoadTable(ctx, e.wh, Ident())
	if err == nil {
		return e.upgrade(ctx, tbl)
	}
	if floe.KindOf(err) != floe.NotFound {
		return nil, fmt.Errorf("audit export: load %s: %w", Ident(), err)
	}
	rs, err := e.src.AuditRecords(ctx, 0, 1)
	if err != nil {
		return nil, fmt.Errorf("audit export: %w", err)
	}
	if len(rs) == 0 {
		return nil, nil
	}
	err = e.cat.CreateNamespace(ctx, e.wh, Namespace(), map[string]string{"comment": "Floe system tables"})
	if err != nil && floe.KindOf(err) != floe.AlreadyExists {
		return nil, fmt.Errorf("audit export: create namespace %s: %w", Namespace(), err)
	}
	_, err = e.cat.CreateTable(ctx, e.wh, Namespace(), catalog.CreateTableRequest{
		Name: TableName, Schema: Schema(), Spec: Spec(), Properties: TableProperties()})
	if err != nil && floe.KindOf(err) != floe.AlreadyExists {
		return nil, fmt.Errorf("audit export: create %s: %w", Ident(), err)
	}
	if err == nil {
		e.log.InfoContext(ctx, "created the audit export table", "table", Ident().String(), "warehouse", e.wh)
	}
	tbl, err = e.lk.LoadTable(ctx, e.wh, Ident())
	if err != nil {
		return nil, fmt.Errorf("audit export: load %s: %w", Ident(), err)
	}
	return tbl, nil
}

// upgradedProperties are set on a system.audit made by an older build:
// its own incremental compaction replaces the generic one, its snapshots
// expire sooner (they only ever append) and its files are written with
// less CPU (writeProperties).
var upgradedProperties = func() map[string]string {
	m := map[string]string{
		maint.PropCompactionEnabled: "false",
		table.MaxSnapshotAgeMsKey:   strconv.FormatInt(snapshotAge.Milliseconds(), 10),
	}
	maps.Copy(m, writeProperties)
	return m
}()

// writeProperties make the export's Parquet writing cheap, as it competes
// with the requests it audits for CPU: snappy (about twice as fast as zstd
// at its fastest level), and no dictionary for the columns whose values
// rarely repeat (a dictionary would be built, then abandoned, for every
// page). Row groups of at most 16 MiB (with streamRowGroup rows) bound
// what a stream's open file holds in memory.
var writeProperties = map[string]string{
	table.ParquetCompressionKey:       "snappy",
	table.ParquetRowGroupSizeBytesKey: strconv.Itoa(streamRowGroupBytes),
	dictColumn("seq"):                 "false",
	dictColumn("time"):                "false",
	dictColumn("request_id"):          "false",
	dictColumn("detail"):              "false",
	dictColumn("prev_hash"):           "false",
	dictColumn("hash"):                "false",
}

// dictColumn is the property that turns Parquet dictionary encoding on or
// off for one column.
func dictColumn(name string) string { return "write.parquet.dict-encoding-enabled.column." + name }

// snapshotAge is how long system.audit keeps snapshots.
const snapshotAge = 15 * time.Minute

// upgrade sets upgradedProperties on tbl if it lacks them.
func (e *Exporter) upgrade(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	props := tbl.Properties()
	current := true
	for k, v := range upgradedProperties {
		current = current && props[k] == v
	}
	if current {
		return tbl, nil
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(upgradedProperties); err != nil {
		return nil, fmt.Errorf("audit export: upgrade %s: %w", Ident(), err)
	}
	next, err := txn.Commit(ctx)
	if err != nil {
		// Another node may have done it; the next export tries again.
		e.log.DebugContext(ctx, "audit export: upgrading the table properties failed", "err", err)
		return lake.Reload(ctx, tbl)
	}
	e.log.InfoContext(ctx, "system.audit now compacts incrementally", "table", Ident().String())
	return next, nil
}

// Watermark returns the seq of the last record in tbl: the WatermarkProperty
// of the newest snapshot of main's history that carries it (another writer,
// e.g. a compaction, may have committed after the exporter), else the
// largest seq in the table's data (0 for an empty table).
func Watermark(ctx context.Context, tbl *table.Table) (int64, error) {
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return 0, nil
	}
	for _, s := range table.AncestorsOf(cur.SnapshotID, tbl.SnapshotByID) {
		if s.Summary == nil {
			continue
		}
		if v, ok := s.Summary.Properties[WatermarkProperty]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return 0, floe.E(floe.Internal, "audit", "snapshot %d of %s has a bad %s %q", s.SnapshotID, Ident(), WatermarkProperty, v)
			}
			return n, nil
		}
	}
	// No snapshot of main's (remaining) history carries the watermark (it
	// was expired after a compaction): the largest seq by the data files'
	// column statistics, read from the manifests only.
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return 0, fmt.Errorf("audit export: plan %s for its last seq: %w", Ident(), err)
	}
	var last int64
	stats := true
	for _, t := range tasks {
		n, ok := upperSeq(t.File)
		stats = stats && ok
		last = max(last, n)
	}
	if stats {
		return last, nil
	}
	// A file without statistics (written by another engine): read seq.
	at, err := tbl.Scan(table.WithSelectedFields("seq")).ToArrowTable(ctx)
	if err != nil {
		return 0, fmt.Errorf("audit export: scan %s for its last seq: %w", Ident(), err)
	}
	defer at.Release()
	last = 0
	for _, c := range at.Column(0).Data().Chunks() {
		for _, v := range c.(*array.Int64).Int64Values() {
			last = max(last, v)
		}
	}
	return last, nil
}

// Schema is the schema system.audit is created with.
func Schema() *iceberg.Schema {
	str := func(id int, name, doc string) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: iceberg.PrimitiveTypes.String, Doc: doc}
	}
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "seq", Type: iceberg.PrimitiveTypes.Int64, Required: true,
			Doc: "position in the audit chain, from 1, without gaps"},
		iceberg.NestedField{ID: 2, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Doc: "when it happened (UTC, microseconds)"},
		str(3, "request_id", "request id, shared by every event of one request"),
		str(4, "principal", "principal name; empty when unknown"),
		str(5, "client_addr", "the caller's network address"),
		str(6, "action", "what was done, e.g. oauth.token or s3.GetObject"),
		str(7, "resource", "what it was done on, e.g. table:floe/crm.accounts"),
		str(8, "outcome", "success, failure, denied, ..."),
		str(9, "detail", "canonical JSON object with more detail"),
		str(10, "prev_hash", "hash of the previous record (hex); empty for the first"),
		str(11, "hash", "sha256 of prev_hash and this record (hex): see floe audit verify"),
	)
}

// Spec partitions system.audit by day(time).
func Spec() *iceberg.PartitionSpec {
	s := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.DayTransform{}, Name: "time_day"})
	return &s
}

// TableProperties are set when system.audit is created: merge manifests
// (it gets a small commit every interval), keep a bounded metadata log,
// expire old snapshots after an hour (the rows stay: every snapshot only
// appends) and leave compaction to the export's incremental one.
func TableProperties() map[string]string {
	m := map[string]string{
		"comment":                     "Floe audit log, exported by Floe (read-only; see docs/audit.md)",
		table.ManifestMergeEnabledKey: "true",
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      "20",
		table.MaxSnapshotAgeMsKey:                 strconv.FormatInt(snapshotAge.Milliseconds(), 10),
		maint.PropCompactionEnabled:               "false",
		table.MinSnapshotsToKeepKey:               "1",
		"floe.system":                             "audit",
	}
	maps.Copy(m, writeProperties)
	return m
}

// toArrow builds one record batch of recs in the Arrow form of sc (the
// table's current schema) with mem, filling columns by name; columns an
// operator added to the table are left null.
func toArrow(mem memory.Allocator, sc *iceberg.Schema, recs []audit.Record) (arrow.RecordBatch, error) {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("audit export: arrow schema: %w", err)
	}
	b := array.NewRecordBuilder(mem, asc)
	defer b.Release()
	for i, f := range asc.Fields() {
		fb := b.Field(i)
		fb.Reserve(len(recs))
		col, ok := columns[f.Name]
		if !ok {
			if !f.Nullable {
				return nil, floe.E(floe.Internal, "audit", "%s has a required column %q the export does not know", Ident(), f.Name)
			}
			for range recs {
				fb.AppendNull()
			}
			continue
		}
		if err := col(fb, recs); err != nil {
			return nil, fmt.Errorf("audit export: column %s: %w", f.Name, err)
		}
	}
	return b.NewRecordBatch(), nil
}

// columns fill one column of the export from records.
var columns = map[string]func(array.Builder, []audit.Record) error{
	"seq": func(b array.Builder, rs []audit.Record) error {
		ib, ok := b.(*array.Int64Builder)
		if !ok {
			return fmt.Errorf("type %s, want long", b.Type())
		}
		for _, r := range rs {
			ib.Append(r.Seq)
		}
		return nil
	},
	"time": func(b array.Builder, rs []audit.Record) error {
		tb, ok := b.(*array.TimestampBuilder)
		if !ok || tb.Type().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return fmt.Errorf("type %s, want timestamptz", b.Type())
		}
		for _, r := range rs {
			tb.Append(arrow.Timestamp(r.Time.UnixMicro()))
		}
		return nil
	},
	"request_id":  stringColumn(func(r audit.Record) string { return r.RequestID }),
	"principal":   stringColumn(func(r audit.Record) string { return r.Principal }),
	"client_addr": stringColumn(func(r audit.Record) string { return r.ClientAddr }),
	"action":      stringColumn(func(r audit.Record) string { return r.Action }),
	"resource":    stringColumn(func(r audit.Record) string { return r.Resource }),
	"outcome":     stringColumn(func(r audit.Record) string { return r.Outcome }),
	"detail":      bytesColumn(func(r audit.Record) []byte { return r.Detail }),
	"prev_hash":   stringColumn(func(r audit.Record) string { return r.PrevHash }),
	"hash":        stringColumn(func(r audit.Record) string { return r.Hash }),
}

// stringColumn fills a string column from a string field.
func stringColumn(get func(audit.Record) string) func(array.Builder, []audit.Record) error {
	return textColumn(get, (*array.StringBuilder).Append)
}

// bytesColumn fills a string column from a field held as bytes (JSON
// text), appended without converting it to a string first.
func bytesColumn(get func(audit.Record) []byte) func(array.Builder, []audit.Record) error {
	return textColumn(get, func(sb *array.StringBuilder, v []byte) { sb.BinaryBuilder.Append(v) })
}

// textColumn fills a string column. The value bytes are reserved at once:
// a builder that grows by doubling copies every value about twice and
// leaves garbage for the GC, which the requests being audited then pay for.
func textColumn[T ~string | ~[]byte](get func(audit.Record) T, add func(*array.StringBuilder, T)) func(array.Builder, []audit.Record) error {
	return func(b array.Builder, rs []audit.Record) error {
		sb, ok := b.(*array.StringBuilder)
		if !ok {
			return fmt.Errorf("type %s, want string", b.Type())
		}
		n := 0
		for _, r := range rs {
			n += len(get(r))
		}
		sb.ReserveData(n)
		for _, r := range rs {
			add(sb, get(r))
		}
		return nil
	}
}
