package auditexport_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/auditexport"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/store/sqlstore"
)

const wh = "floe"

type env struct {
	objs *bucket.Store
	st   *sqlstore.Store
	cat  *catalog.Catalog
	lk   *lake.Lake
	log  *audit.Log
}

// newEnv is one node over a fresh SQLite store and object store.
func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	return newNode(t, filepath.Join(dir, "floe.db"), newObjects(t), true)
}

// newObjects is an embedded object store holding the warehouse bucket.
func newObjects(t *testing.T) *bucket.Store {
	t.Helper()
	dir := t.TempDir()
	objs, err := bucket.New(bucket.Options{Buckets: map[string]string{wh: filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objs.Close() })
	return objs
}

// newNode is one Floe node: its own connection to the store at dsn (SQLite
// path or PostgreSQL URL), catalog and lake, over the shared objects. The
// first node of a store creates the warehouse.
func newNode(t *testing.T, dsn string, objs *bucket.Store, first bool) *env {
	t.Helper()
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if first {
		if err := st.PutWarehouse(ctx, catalog.Warehouse{Name: wh, Location: "s3://" + wh}); err != nil {
			t.Fatal(err)
		}
	}
	cat := catalog.New(st, objs.FileIO(), catalog.Options{})
	return &env{objs: objs, st: st, cat: cat, lk: lake.New(cat, lake.NewBucketFS(objs), lake.Options{}), log: audit.New(st, audit.Options{})}
}

// clusters start n nodes sharing one store and one object store: SQLite,
// and PostgreSQL too when FLOE_TEST_PG_DSN names a server.
func clusters(t *testing.T) map[string]func(t *testing.T, n int) []*env {
	open := func(dsn func(t *testing.T) string) func(t *testing.T, n int) []*env {
		return func(t *testing.T, n int) []*env {
			d, objs := dsn(t), newObjects(t)
			var nodes []*env
			for i := range n {
				nodes = append(nodes, newNode(t, d, objs, i == 0))
			}
			return nodes
		}
	}
	out := map[string]func(t *testing.T, n int) []*env{
		"sqlite": open(func(t *testing.T) string { return filepath.Join(t.TempDir(), "floe.db") }),
	}
	if os.Getenv(pgtest.Env) != "" {
		out["postgres"] = open(func(t *testing.T) string { return pgtest.Fresh(t, os.Getenv(pgtest.Env)) })
	}
	return out
}

func (e *env) exporter(o auditexport.Options) *auditexport.Exporter {
	o.Warehouse = wh
	return auditexport.New(e.st, e.cat, e.lk, o)
}

var base = time.Date(2026, 3, 1, 23, 59, 59, 0, time.UTC)

// appendEvents adds n events, spread over two days, with a detail that
// exercises JSON escaping.
func (e *env) appendEvents(t *testing.T, n int) {
	t.Helper()
	events := make([]audit.Event, n)
	for i := range events {
		events[i] = audit.Event{Time: base.Add(time.Duration(i) * 123457 * time.Microsecond), RequestID: fmt.Sprintf("req-%d", i),
			Principal: "etl", ClientAddr: "10.0.0.7", Action: "test.event", Resource: "table:floe/crm.t" + strconv.Itoa(i%3),
			Outcome: audit.OutcomeSuccess, Detail: map[string]any{"i": i, "note": "quote \" <tag> é"}}
	}
	if err := e.log.AppendBatch(t.Context(), events); err != nil {
		t.Fatal(err)
	}
}

// exported reads every row of system.audit, in seq order, as records.
func (e *env) exported(t *testing.T) ([]audit.Record, *table.Table) {
	t.Helper()
	tbl, err := e.lk.LoadTable(t.Context(), wh, auditexport.Ident())
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	var out []audit.Record
	for rdr.Next() {
		rec := rdr.RecordBatch()
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("no column %s in %s", name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		str := func(name string, i int) string { return col(name).(*array.String).Value(i) }
		for i := range int(rec.NumRows()) {
			out = append(out, audit.Record{
				Seq:       col("seq").(*array.Int64).Value(i),
				Time:      time.UnixMicro(int64(col("time").(*array.Timestamp).Value(i))).UTC(),
				RequestID: str("request_id", i), Principal: str("principal", i), ClientAddr: str("client_addr", i),
				Action: str("action", i), Resource: str("resource", i), Outcome: str("outcome", i),
				Detail: []byte(str("detail", i)), PrevHash: str("prev_hash", i), Hash: str("hash", i),
			})
		}
	}
	slices.SortFunc(out, func(a, b audit.Record) int { return int(a.Seq - b.Seq) })
	return out, tbl
}

// chain is a read-only audit.Store over exported rows, so that audit.Verify
// can check the chain as the table holds it.
type chain []audit.Record

func (c chain) AppendAudit(context.Context, func(int64, string) (audit.Record, error)) (audit.Record, error) {
	return audit.Record{}, errors.New("read-only")
}
func (c chain) AppendAuditBatch(context.Context, func(int64, string) ([]audit.Record, error)) error {
	return errors.New("read-only")
}
func (c chain) AuditRecords(_ context.Context, after int64, limit int) ([]audit.Record, error) {
	var out []audit.Record
	for _, r := range c {
		if r.Seq > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}
func (c chain) AuditHead(context.Context) (int64, string, error) {
	if len(c) == 0 {
		return 0, "", nil
	}
	return c[len(c)-1].Seq, c[len(c)-1].Hash, nil
}

func wantSeqs(t *testing.T, rs []audit.Record, n int) {
	t.Helper()
	if len(rs) != n {
		t.Fatalf("%d rows exported, want %d", len(rs), n)
	}
	for i, r := range rs {
		if r.Seq != int64(i+1) {
			t.Fatalf("row %d has seq %d: seqs are not 1..%d exactly once", i, r.Seq, n)
		}
	}
}

// TestExport: nothing is created for an empty log; then the records are
// exported once each, in commits of at most BatchSize, with the watermark
// in each snapshot's summary; the rows are byte-for-byte the stored
// records, so the hash chain verifies from the table alone.
func TestExport(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ex := e.exporter(auditexport.Options{BatchSize: 40})
	res, err := ex.Export(ctx)
	if err != nil || res != (auditexport.Result{}) {
		t.Fatalf("export of an empty log: %+v, %v", res, err)
	}
	if _, err := e.cat.LoadTable(ctx, wh, auditexport.Ident()); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("an empty log created the table: %v", err)
	}

	e.appendEvents(t, 100)
	res, err = ex.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res != (auditexport.Result{Records: 100, Commits: 3, LastSeq: 100}) {
		t.Fatalf("first export: %+v", res)
	}
	e.appendEvents(t, 15)
	if res, err = ex.Export(ctx); err != nil || res != (auditexport.Result{Records: 15, Commits: 1, LastSeq: 115}) {
		t.Fatalf("second export: %+v, %v", res, err)
	}
	if res, err = ex.Export(ctx); err != nil || res != (auditexport.Result{LastSeq: 115}) {
		t.Fatalf("export with nothing new: %+v, %v", res, err)
	}

	rows, tbl := e.exported(t)
	wantSeqs(t, rows, 115)
	stored, err := e.st.AuditRecords(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range stored {
		s, r := stored[i], rows[i]
		if !s.Time.Equal(r.Time) || string(s.Detail) != string(r.Detail) || s.Hash != r.Hash || s.PrevHash != r.PrevHash ||
			s.Action != r.Action || s.Resource != r.Resource || s.RequestID != r.RequestID || s.Principal != r.Principal ||
			s.ClientAddr != r.ClientAddr || s.Outcome != r.Outcome {
			t.Fatalf("row %d differs from the stored record:\n%+v\n%+v", i, r, s)
		}
	}
	if err := audit.New(chain(rows), audit.Options{}).Verify(ctx); err != nil {
		t.Fatalf("the exported chain does not verify: %v", err)
	}
	// The watermark of each snapshot, and its first seq.
	var marks []string
	for _, s := range tbl.Metadata().Snapshots() {
		marks = append(marks, s.Summary.Properties[auditexport.FirstSeqProperty]+"-"+s.Summary.Properties[auditexport.WatermarkProperty])
	}
	if want := []string{"1-40", "41-80", "81-100", "101-115"}; !slices.Equal(marks, want) {
		t.Errorf("snapshots cover %v, want %v", marks, want)
	}
	if w, err := auditexport.Watermark(ctx, tbl); err != nil || w != 115 {
		t.Errorf("Watermark = %d, %v", w, err)
	}
	// Partitioned by day: the events span two days.
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	days := map[any]bool{}
	for _, task := range tasks {
		for _, v := range task.File.Partition() {
			days[v] = true
		}
	}
	if len(days) != 2 {
		t.Errorf("%d day partitions, want 2", len(days))
	}
}

// TestConcurrentExporters: exporters on several nodes (each with its own
// store connection) race for the same records, round after round, on a
// table whose properties ask iceberg-go to retry lost commits by itself;
// every record lands exactly once.
func TestConcurrentExporters(t *testing.T) {
	for name, cluster := range clusters(t) {
		t.Run(name, func(t *testing.T) {
			nodes := cluster(t, 3)
			e := nodes[0]
			ctx := t.Context()
			logger := &raceLog{}
			e.appendEvents(t, 10) // the table exists before the race
			if _, err := e.exporter(auditexport.Options{}).Export(ctx); err != nil {
				t.Fatal(err)
			}
			// Were iceberg-go to retry a lost commit by itself, it would replay
			// the append on the new head: duplicates. The export must not let it.
			tbl, err := e.lk.LoadTable(ctx, wh, auditexport.Ident())
			if err != nil {
				t.Fatal(err)
			}
			txn := tbl.NewTransaction()
			if err := txn.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: "3", table.CommitMinRetryWaitMsKey: "1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			const rounds = 6
			var exs []*auditexport.Exporter
			for n, node := range nodes {
				exs = append(exs, node.exporter(auditexport.Options{BatchSize: 7, Node: fmt.Sprint("node-", n), Logger: slog.New(logger)}))
			}
			for r := range rounds {
				nodes[r%len(nodes)].appendEvents(t, 9)
				// All nodes start from the same watermark at once.
				var wg sync.WaitGroup
				start := make(chan struct{})
				errs := make(chan error, len(exs))
				for _, ex := range exs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						if _, err := ex.Export(ctx); err != nil {
							errs <- err
						}
					}()
				}
				close(start)
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			}
			if n := logger.lost(); n == 0 {
				t.Error("the exporters never raced for a commit")
			} else {
				t.Logf("%d commits lost a race and were redone", n)
			}
			rows, _ := e.exported(t)
			wantSeqs(t, rows, 10+rounds*9)
		})
	}
}

// TestNodesTakeTurns: background exporters on three nodes, taking turns
// through the store's lease while records keep coming, export every record
// exactly once.
func TestNodesTakeTurns(t *testing.T) {
	for name, cluster := range clusters(t) {
		t.Run(name, func(t *testing.T) {
			nodes := cluster(t, 3)
			for i, n := range nodes {
				ex := n.exporter(auditexport.Options{Interval: 30 * time.Millisecond, BatchSize: 25, Leases: n.st, Node: fmt.Sprint("node-", i)})
				ex.Start()
				t.Cleanup(func() { ex.Close() })
			}
			for i := range 20 {
				nodes[i%3].appendEvents(t, 11)
				time.Sleep(10 * time.Millisecond)
			}
			var rows []audit.Record
			waitFor(t, func() bool {
				if _, err := nodes[0].cat.LoadTable(t.Context(), wh, auditexport.Ident()); err != nil {
					return false
				}
				rows, _ = nodes[1].exported(t)
				return len(rows) >= 220
			})
			wantSeqs(t, rows, 220)
		})
	}
}

// raceLog counts the exporters' "another writer committed first" lines.
type raceLog struct {
	mu sync.Mutex
	n  int
}

func (r *raceLog) lost() int { r.mu.Lock(); defer r.mu.Unlock(); return r.n }

func (r *raceLog) Enabled(context.Context, slog.Level) bool { return true }
func (r *raceLog) Handle(_ context.Context, rec slog.Record) error {
	if strings.Contains(rec.Message, "another writer committed first") {
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
	}
	return nil
}
func (r *raceLog) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *raceLog) WithGroup(string) slog.Handler      { return r }

// TestLeaseAndBackground: the background exporter exports every interval,
// but only while it can hold the lease; a node holding it elsewhere keeps
// it from exporting. Close stops it.
func TestLeaseAndBackground(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.appendEvents(t, 5)
	other, ok, err := e.st.AcquireLease(ctx, auditexport.LeaseName, "other-node", time.Hour)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	ex := e.exporter(auditexport.Options{Interval: 20 * time.Millisecond, Leases: e.st, Node: "this-node"})
	ex.Start()
	defer ex.Close()
	time.Sleep(300 * time.Millisecond)
	if _, err := e.cat.LoadTable(ctx, wh, auditexport.Ident()); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("exported while another node held the lease: %v", err)
	}
	if err := e.st.ReleaseLease(ctx, other); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := e.cat.LoadTable(ctx, wh, auditexport.Ident())
		return err == nil
	})
	e.appendEvents(t, 5)
	var rows []audit.Record
	waitFor(t, func() bool { rows, _ = e.exported(t); return len(rows) == 10 })
	wantSeqs(t, rows, 10)
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	// Stopped: new records stay in the log only; the lease was released.
	e.appendEvents(t, 1)
	time.Sleep(100 * time.Millisecond)
	if rows, _ = e.exported(t); len(rows) != 10 {
		t.Errorf("exported after Close: %d rows", len(rows))
	}
	if _, ok, err := e.st.AcquireLease(ctx, auditexport.LeaseName, "other-node", time.Minute); err != nil || !ok {
		t.Errorf("the lease was not released: %v %v", ok, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatermarkFallback: a snapshot written by someone else (without the
// watermark property) does not hide the watermark of its ancestors; a
// table whose history carries no watermark at all yields its largest seq.
func TestWatermarkFallback(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.appendEvents(t, 12)
	if _, err := e.exporter(auditexport.Options{}).Export(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lk.LoadTable(ctx, wh, auditexport.Ident())
	if err != nil {
		t.Fatal(err)
	}
	// Someone else appends a row (seq 500) without the property.
	if _, err := lake.AppendTable(ctx, tbl, seqTable(t, tbl, 500), iceberg.Properties{"writer": "someone"}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = lake.Reload(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	if w, err := auditexport.Watermark(ctx, tbl); err != nil || w != 12 {
		t.Errorf("Watermark behind a foreign snapshot = %d, %v; want 12", w, err)
	}
	// A table with no watermark anywhere: its largest seq.
	if err := e.cat.CreateNamespace(ctx, wh, catalog.Namespace{"x"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.CreateTable(ctx, wh, catalog.Namespace{"x"}, catalog.CreateTableRequest{Name: "copy", Schema: auditexport.Schema()}); err != nil {
		t.Fatal(err)
	}
	cp, err := e.lk.LoadTable(ctx, wh, catalog.Ident{Namespace: catalog.Namespace{"x"}, Name: "copy"})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := auditexport.Watermark(ctx, cp); err != nil || w != 0 {
		t.Errorf("Watermark of an empty table = %d, %v", w, err)
	}
	if cp, err = lake.AppendTable(ctx, cp, seqTable(t, cp, 3, 77, 9), nil); err != nil {
		t.Fatal(err)
	}
	if w, err := auditexport.Watermark(ctx, cp); err != nil || w != 77 {
		t.Errorf("Watermark from the data = %d, %v; want 77", w, err)
	}
}

// seqTable is an Arrow table of rows with only seq set.
func seqTable(t *testing.T, tbl *table.Table, seqs ...int64) arrow.Table {
	t.Helper()
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	for _, s := range seqs {
		for i := range asc.NumFields() {
			if asc.Field(i).Name == "seq" {
				b.Field(i).(*array.Int64Builder).Append(s)
			} else {
				b.Field(i).AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
}

// labelled is a Source that records the profile label "floe" of the
// contexts it is read with.
type labelled struct {
	auditexport.Source
	mu     sync.Mutex
	labels []string
}

func (l *labelled) AuditRecords(ctx context.Context, after int64, limit int) ([]audit.Record, error) {
	v, _ := pprof.Label(ctx, "floe")
	l.mu.Lock()
	l.labels = append(l.labels, v)
	l.mu.Unlock()
	return l.Source.AuditRecords(ctx, after, limit)
}

// TestBackgroundExportIsProfileLabelled: the background export runs under
// the profile label floe=audit-export (inherited by the goroutines it
// starts), so that a CPU profile of a server can tell its whole cost.
func TestBackgroundExportIsProfileLabelled(t *testing.T) {
	e := newEnv(t)
	e.appendEvents(t, 5)
	src := &labelled{Source: e.st}
	done := make(chan auditexport.Result, 1)
	ex := auditexport.New(src, e.cat, e.lk, auditexport.Options{Warehouse: wh, Interval: 10 * time.Millisecond,
		Observe: func(r auditexport.Result, err error) {
			if err == nil && r.Records > 0 {
				select {
				case done <- r:
				default:
				}
			}
		}})
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	<-done
	ex.Close()
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.labels) == 0 {
		t.Fatal("the export did not read the source")
	}
	for _, l := range src.labels {
		if l != "audit-export" {
			t.Fatalf("the export read its source with profile label floe=%q, want audit-export", l)
		}
	}
}

// TestExportReusesArrowBuffers: through the real writer, a batch's Arrow
// buffers come back to the exporter once its files are written (nothing
// keeps them), within the bound of twice BatchBytes, and batches built
// from reused buffers export every record unchanged.
func TestExportReusesArrowBuffers(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.appendEvents(t, 300)
	const batchBytes = 64 << 10
	ex := e.exporter(auditexport.Options{BatchSize: 50, BatchBytes: batchBytes})
	if res, err := ex.Export(ctx); err != nil || res.Records != 300 || res.Commits != 6 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	kept := auditexport.ArrowBuffersKept(ex)
	if kept == 0 || kept > 2*batchBytes {
		t.Fatalf("the exporter keeps %d bytes of Arrow buffers after 6 commits, want some and at most %d", kept, 2*batchBytes)
	}
	rows, _ := e.exported(t)
	wantSeqs(t, rows, 300)
	want, err := e.st.AuditRecords(ctx, 0, 300)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if !reflect.DeepEqual(rows[i], want[i]) {
			t.Fatalf("row %d differs from the stored record:\n%+v\n%+v", i, rows[i], want[i])
		}
	}
	if err := audit.New(chain(rows), audit.Options{}).Verify(ctx); err != nil {
		t.Fatalf("the exported chain: %v", err)
	}
}
