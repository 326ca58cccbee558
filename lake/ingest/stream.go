package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// Defaults of StreamOptions.
const (
	DefaultFlushInterval = 5 * time.Second
	DefaultFlushRows     = 100_000
)

// StreamOptions configures a Streamer. Zero values mean defaults.
type StreamOptions struct {
	// FlushInterval is how often buffered rows are committed.
	FlushInterval time.Duration
	// FlushRows commits a table's buffer as soon as it holds this many rows.
	FlushRows int64
	// MaxBufferedRows bounds a table's buffer (default 10 × FlushRows): a
	// request that would exceed it is refused (Unavailable) until a flush
	// has made room.
	MaxBufferedRows int64
	// Logger receives structured logs; nil is the Service's.
	Logger *slog.Logger
}

// Streamer buffers rows appended in small requests (micro-batches) in
// memory, per table, and commits each table's buffer as one append
// snapshot every FlushInterval, when it reaches FlushRows, on Flush and on
// Close. Rows accepted but not yet committed are lost if the process dies;
// a request that must not lose rows waits for the commit (Wait).
type Streamer struct {
	svc  *Service
	opts StreamOptions
	log  *slog.Logger

	mu     sync.Mutex
	tables map[string]*streamBuffer
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closed bool
}

// streamBuffer is the pending rows of one table.
type streamBuffer struct {
	wh string
	id catalog.Ident

	flushMu sync.Mutex // one flush of this table at a time, in order

	// guarded by Streamer.mu
	recs    []arrow.RecordBatch
	rows    int64
	waiters []chan flushResult
}

type flushResult struct {
	snapshotID int64
	err        error
}

// StreamRequest is one micro-batch.
type StreamRequest struct {
	Warehouse string
	Table     catalog.Ident
	// Wait makes Append return only once the rows are committed (their
	// table's buffer is flushed at once).
	Wait bool
	// Authorize, if set, is called before the body is read.
	Authorize func() error
}

// StreamResult says what happened to a micro-batch.
type StreamResult struct {
	// Accepted is the number of rows taken from the request.
	Accepted int64 `json:"accepted"`
	// Committed is whether they are committed (Wait), else buffered.
	Committed bool `json:"committed"`
	// SnapshotID is the snapshot that committed them (Wait only).
	SnapshotID int64 `json:"snapshot_id,omitempty"`
	// Buffered is the rows of the table waiting for the next flush.
	Buffered int64 `json:"buffered"`
}

// NewStreamer returns a Streamer over s and starts its flusher; Close
// stops it.
func (s *Service) NewStreamer(opts StreamOptions) *Streamer {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.FlushRows <= 0 {
		opts.FlushRows = DefaultFlushRows
	}
	if opts.MaxBufferedRows <= 0 {
		opts.MaxBufferedRows = 10 * opts.FlushRows
	}
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	st := &Streamer{svc: s, opts: opts, log: opts.Logger, tables: map[string]*streamBuffer{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go st.run()
	return st
}

// Append parses body (NDJSON objects, in the table's columns) and buffers
// its rows for the table, which must exist. Either every row of the
// request is accepted or none is (a bad row fails the whole request with
// a floe.Invalid error).
func (st *Streamer) Append(ctx context.Context, req StreamRequest, body io.Reader) (StreamResult, error) {
	var res StreamResult
	if req.Authorize != nil {
		if err := req.Authorize(); err != nil {
			return res, err
		}
	}
	tbl, err := st.svc.lake.LoadTable(ctx, req.Warehouse, req.Table)
	if err != nil {
		return res, err
	}
	src, err := Open(ctx, body, ReadOptions{Format: NDJSON, Target: tbl.Schema(), TempDir: st.svc.opts.TempDir})
	if err != nil {
		return res, err
	}
	defer src.Close()
	conf, err := newConformer(ctx, src, tbl.Schema(), memory.DefaultAllocator)
	if err != nil {
		return res, err
	}
	defer conf.Release()
	var recs []arrow.RecordBatch
	release := func() {
		for _, r := range recs {
			r.Release()
		}
	}
	var n int64
	for conf.Next() {
		rec := conf.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
		n += rec.NumRows()
	}
	if err := conf.Err(); err != nil {
		release()
		return res, err
	}
	if n == 0 {
		return res, nil
	}
	key := req.Warehouse + "\x00" + req.Table.String()
	var wait chan flushResult
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		release()
		return res, floe.E(floe.Unavailable, "stream", "the server is shutting down")
	}
	b := st.tables[key]
	if b == nil {
		b = &streamBuffer{wh: req.Warehouse, id: req.Table}
		st.tables[key] = b
	}
	if b.rows+n > st.opts.MaxBufferedRows {
		st.mu.Unlock()
		release()
		return res, floe.E(floe.Unavailable, "stream", "the buffer of table %s is full (%d rows pending, at most %d): retry after the next flush", req.Table, b.rows, st.opts.MaxBufferedRows)
	}
	b.recs = append(b.recs, recs...)
	b.rows += n
	res.Accepted, res.Buffered = n, b.rows
	if req.Wait {
		wait = make(chan flushResult, 1)
		b.waiters = append(b.waiters, wait)
	}
	full := b.rows >= st.opts.FlushRows
	st.mu.Unlock()
	if req.Wait {
		go st.flushTable(context.WithoutCancel(ctx), b)
		select {
		case r := <-wait:
			if r.err != nil {
				return res, r.err
			}
			res.Committed, res.SnapshotID, res.Buffered = true, r.snapshotID, 0
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	if full {
		select {
		case st.kick <- struct{}{}:
		default:
		}
	}
	return res, nil
}

// run flushes every FlushInterval and when kicked, until Close.
func (st *Streamer) run() {
	defer close(st.done)
	t := time.NewTicker(st.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
		case <-st.kick:
		}
		_ = st.flushAll(context.Background())
	}
}

// Flush commits every table's buffered rows now.
func (st *Streamer) Flush(ctx context.Context) error { return st.flushAll(ctx) }

func (st *Streamer) flushAll(ctx context.Context) error {
	st.mu.Lock()
	var bufs []*streamBuffer
	for _, b := range st.tables {
		if b.rows > 0 {
			bufs = append(bufs, b)
		}
	}
	st.mu.Unlock()
	var errs []error
	for _, b := range bufs {
		errs = append(errs, st.flushTable(ctx, b))
	}
	return errors.Join(errs...)
}

// flushTable commits what b holds as one append snapshot and tells the
// waiters. On failure the rows are dropped (and the waiters told).
func (st *Streamer) flushTable(ctx context.Context, b *streamBuffer) error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	st.mu.Lock()
	recs, rows, waiters := b.recs, b.rows, b.waiters
	b.recs, b.rows, b.waiters = nil, 0, nil
	st.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	snap, err := st.commit(ctx, b, recs)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		st.log.ErrorContext(ctx, "stream: rows dropped: the commit failed", "table", b.id.String(), "rows", rows, "err", err)
	} else {
		st.log.DebugContext(ctx, "stream: committed", "table", b.id.String(), "rows", rows, "snapshot_id", snap)
	}
	for _, w := range waiters {
		w <- flushResult{snapshotID: snap, err: err}
	}
	return err
}

func (st *Streamer) commit(ctx context.Context, b *streamBuffer, recs []arrow.RecordBatch) (int64, error) {
	tbl, err := st.svc.lake.LoadTable(ctx, b.wh, b.id)
	if err != nil {
		return 0, err
	}
	rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	out, err := lake.Append(ctx, tbl, rdr, iceberg.Properties{"floe.ingest.mode": "stream", "floe.stream.rows": itoa(countRows(recs))})
	if err != nil {
		return 0, err
	}
	if s := out.CurrentSnapshot(); s != nil {
		return s.SnapshotID, nil
	}
	return 0, nil
}

func countRows(recs []arrow.RecordBatch) (n int64) {
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

// Close stops the flusher and commits what is buffered.
func (st *Streamer) Close(ctx context.Context) error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.closed = true
	st.mu.Unlock()
	close(st.stop)
	<-st.done
	return st.flushAll(ctx)
}
