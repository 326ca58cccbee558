package maint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Defaults of Options.
const (
	// DefaultInterval is the default schedule tick.
	DefaultInterval = time.Minute
	// DefaultMaxLeaseTTL bounds the default lease TTL (half the interval).
	DefaultMaxLeaseTTL = 30 * time.Second
	// DefaultWorkers is how many jobs one node runs at once by default.
	DefaultWorkers = 2
	// DefaultHistory is how long maintenance_runs keeps a run by default.
	DefaultHistory = 7 * 24 * time.Hour
)

// pruneEvery is how often a node deletes runs older than the history.
const pruneEvery = time.Hour

// maxDetail bounds the detail stored with a run, in bytes.
const maxDetail = 2000

// Options configures a Scheduler. Zero values mean defaults.
type Options struct {
	// Node names this node as a lease holder and in maintenance_runs; it
	// must differ between nodes (default: hostname-<random>).
	Node string
	// Interval is the schedule tick: each job runs once per table per
	// interval (default 1m). Ticks are numbered floor(unix time / Interval),
	// so every node with the same interval agrees on them.
	Interval time.Duration
	// LeaseTTL is how long a lease lasts without renewal; a running job
	// renews it every third of it. It bounds how long the job of a node that
	// died stays blocked (default half the interval, at most 30s).
	LeaseTTL time.Duration
	// Retry is how often, within a tick, a node looks again at tables whose
	// lease another node held (default a quarter of LeaseTTL).
	Retry time.Duration
	// Workers is how many jobs this node runs at once (default 2).
	Workers int
	// History is how long runs are kept in maintenance_runs (default 7 days).
	History time.Duration
	// Hook, if set, runs before every job run (see Hook).
	Hook Hook
	// Observe, if set, is told of every job run: the job's name, its
	// error (nil: it succeeded) and how long it took (metrics).
	Observe func(job string, err error, d time.Duration)
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// After waits on the clock; nil means time.After.
	After func(time.Duration) <-chan time.Time
}

// Stats counts what one pass or sweep did on this node.
type Stats struct {
	// Tick is the tick the pass ran for.
	Tick int64
	// Ran counts the jobs this node ran to an end (ok or failed).
	Ran int
	// Changed counts the runs among Ran that changed their table.
	Changed int
	// Failed counts the runs among Ran whose job returned an error.
	Failed int
	// Done counts pairs whose tick already had a finished run.
	Done int
	// Busy counts pairs left because another node held the lease.
	Busy int
	// Lost counts runs whose lease another node took over.
	Lost int
	// Cancelled counts runs stopped by Close.
	Cancelled int
	// Errors counts store failures that kept a pair from running.
	Errors int
	// NotDue counts pairs whose job (a Periodic one) was not due.
	NotDue int
}

// Scheduler runs jobs on every table once per tick, coordinating with the
// schedulers of other nodes through leases in the Store. It is safe for
// concurrent use.
type Scheduler struct {
	store    Store
	jobs     []Job
	node     string
	interval time.Duration
	ttl      time.Duration
	retry    time.Duration
	workers  int
	history  time.Duration
	hook     Hook
	observe  func(job string, err error, d time.Duration)
	log      *slog.Logger
	now      func() time.Time
	after    func(time.Duration) <-chan time.Time

	// life is cancelled by Close and Halt: it stops passes and jobs.
	life context.Context
	stop context.CancelFunc
	// alive is cancelled by Halt only: once it is, nothing more is written.
	alive context.Context
	kill  context.CancelFunc

	mu        sync.Mutex
	closed    bool
	started   bool
	wg        sync.WaitGroup
	lastPrune time.Time // guarded by mu
}

// New returns a Scheduler of jobs over store. Start runs it in the background.
func New(store Store, jobs []Job, opts Options) (*Scheduler, error) {
	seen := map[string]bool{}
	for _, j := range jobs {
		if err := validJobName(j.Name()); err != nil {
			return nil, err
		}
		if seen[j.Name()] {
			return nil, floe.E(floe.Invalid, "", "maintenance job %q is registered twice", j.Name())
		}
		seen[j.Name()] = true
	}
	if opts.Interval < 0 || opts.LeaseTTL < 0 || opts.Retry < 0 || opts.History < 0 {
		return nil, floe.E(floe.Invalid, "", "maintenance durations must not be negative")
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = min(opts.Interval/2, DefaultMaxLeaseTTL)
	}
	if opts.Retry == 0 {
		opts.Retry = opts.LeaseTTL / 4
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.History == 0 {
		opts.History = DefaultHistory
	}
	if opts.Node == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "floe"
		}
		opts.Node = fmt.Sprintf("%s-%08x", host, rand.Uint32())
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	s := &Scheduler{store: store, jobs: jobs, node: opts.Node, interval: opts.Interval, ttl: opts.LeaseTTL,
		retry: opts.Retry, workers: opts.Workers, history: opts.History, hook: opts.Hook, observe: opts.Observe,
		log: opts.Logger.With("node", opts.Node), now: opts.Now, after: opts.After}
	s.life, s.stop = context.WithCancel(context.Background())
	s.alive, s.kill = context.WithCancel(context.Background())
	return s, nil
}

// Node returns the name this scheduler holds leases under.
func (s *Scheduler) Node() string { return s.node }

// Interval returns the schedule tick.
func (s *Scheduler) Interval() time.Duration { return s.interval }

// Tick returns the tick t falls in: floor(unix time / interval).
func (s *Scheduler) Tick(t time.Time) int64 { return t.UnixNano() / int64(s.interval) }

// tickStart returns the time tick begins.
func (s *Scheduler) tickStart(tick int64) time.Time { return time.Unix(0, tick*int64(s.interval)) }

// Start runs the scheduler in the background until ctx is done or Close is
// called. Passes start on tick boundaries: the first at the next one.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.started {
		return
	}
	s.started = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := s.bind(ctx)
		defer cancel()
		s.loop(ctx)
	}()
}

// Close stops the scheduler and waits for it. Running jobs are cancelled;
// their runs are recorded as cancelled and their leases released, so that
// another node can run them in the same tick.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
	return nil
}

// Halt stops the scheduler the way a crash would: running jobs are
// cancelled, but nothing more is written to the store, so their leases stay
// until they expire and their runs stay "running". It exists for crash tests.
func (s *Scheduler) Halt() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.kill()
	s.stop()
	s.wg.Wait()
}

// errClosed is returned by RunOnce after Close or Halt.
var errClosed = floe.E(floe.Unavailable, "", "the maintenance scheduler is closed")

// RunOnce makes one sweep over every table and job for the current tick,
// without waiting for leases other nodes hold (they count as Busy).
func (s *Scheduler) RunOnce(ctx context.Context) (Stats, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Stats{}, errClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	ctx, cancel := s.bind(ctx)
	defer cancel()
	st := Stats{Tick: s.Tick(s.now())}
	items, err := s.items(ctx)
	if err != nil {
		return st, err
	}
	s.sweep(ctx, st.Tick, items, &st)
	return st, nil
}

// bind returns ctx, also cancelled when the scheduler stops.
func (s *Scheduler) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(s.life, cancel)
	return ctx, func() { unhook(); cancel() }
}

func (s *Scheduler) loop(ctx context.Context) {
	s.log.InfoContext(ctx, "maintenance scheduler started", "interval", s.interval, "lease_ttl", s.ttl,
		"workers", s.workers, "jobs", len(s.jobs))
	defer s.log.InfoContext(ctx, "maintenance scheduler stopped")
	last := s.Tick(s.now())
	for {
		now := s.now()
		if tick := s.Tick(now); tick <= last {
			if !s.sleep(ctx, s.tickStart(last+1).Sub(now)) {
				return
			}
			continue
		}
		st := s.pass(ctx)
		last = st.Tick
		if ctx.Err() != nil {
			return
		}
		s.prune(ctx)
	}
}

// sleep waits d on the scheduler's clock; false if ctx ended first.
func (s *Scheduler) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-s.after(d):
		return true
	}
}

// pass runs every job on every table for the current tick, coming back to
// the pairs other nodes hold until they are done or the tick ends.
func (s *Scheduler) pass(ctx context.Context) Stats {
	start := s.now()
	st := Stats{Tick: s.Tick(start)}
	log := s.log.With("tick", st.Tick)
	items, err := s.items(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.WarnContext(ctx, "maintenance: cannot list tables", "err", err)
		}
		return st
	}
	busy := s.sweep(ctx, st.Tick, items, &st)
	for len(busy) > 0 && s.sleep(ctx, s.retry) && s.Tick(s.now()) == st.Tick {
		st.Busy -= len(busy)
		busy = s.sweep(ctx, st.Tick, busy, &st)
	}
	lvl := slog.LevelDebug
	if st.Changed > 0 || st.Failed > 0 || st.Errors > 0 || st.Lost > 0 {
		lvl = slog.LevelInfo
	}
	log.Log(ctx, lvl, "maintenance pass", "tables", len(items)/max(len(s.jobs), 1), "ran", st.Ran, "changed", st.Changed,
		"failed", st.Failed, "done_elsewhere", st.Done, "busy", st.Busy, "lost", st.Lost,
		"cancelled", st.Cancelled, "errors", st.Errors, "took", s.now().Sub(start))
	return st
}

// prune deletes old runs at most once per pruneEvery on this node.
func (s *Scheduler) prune(ctx context.Context) {
	now := s.now()
	s.mu.Lock()
	due := now.Sub(s.lastPrune) >= pruneEvery
	if due {
		s.lastPrune = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	n, err := s.store.PruneMaintenanceRuns(ctx, now.Add(-s.history))
	if err != nil {
		s.log.WarnContext(ctx, "maintenance: cannot prune old runs", "err", err)
		return
	}
	if n > 0 {
		s.log.InfoContext(ctx, "maintenance: pruned old runs", "runs", n, "history", s.history)
	}
}

// item is one job on one table.
type item struct {
	job   Job
	table TableRef // without Tick
}

// items lists every table of every warehouse, once per job, in random order
// so that nodes starting a pass together spread over different tables.
func (s *Scheduler) items(ctx context.Context) ([]item, error) {
	whs, err := s.store.Warehouses(ctx)
	if err != nil {
		return nil, fmt.Errorf("list warehouses: %w", err)
	}
	var tables []TableRef
	var walk func(wh string, parent catalog.Namespace) error
	walk = func(wh string, parent catalog.Namespace) error {
		children, err := s.store.ListNamespaces(ctx, wh, parent, "", 0)
		if err != nil {
			if floe.KindOf(err) == floe.NotFound {
				return nil // dropped while we listed
			}
			return fmt.Errorf("list namespaces of %s in %s: %w", parent, wh, err)
		}
		for _, ns := range children {
			names, err := s.store.ListEntities(ctx, wh, ns, catalog.KindTable, "", 0)
			if err != nil && floe.KindOf(err) != floe.NotFound {
				return fmt.Errorf("list tables of %s in %s: %w", ns, wh, err)
			}
			for _, n := range names {
				tables = append(tables, TableRef{Warehouse: wh, Ident: catalog.Ident{Namespace: ns, Name: n}})
			}
			if err := walk(wh, ns); err != nil {
				return err
			}
		}
		return nil
	}
	for _, w := range whs {
		if err := walk(w.Name, nil); err != nil {
			return nil, err
		}
	}
	items := make([]item, 0, len(tables)*len(s.jobs))
	for _, t := range tables {
		for _, j := range s.jobs {
			items = append(items, item{job: j, table: t})
		}
	}
	rand.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	return items, nil
}

// state is what became of one item in a sweep.
type state int

const (
	stateRan       state = iota // this node ran the job to an end
	stateChanged                // ... and it changed the table
	stateFailed                 // ... and the job failed
	stateDone                   // the tick already had a finished run
	stateBusy                   // another node holds the lease
	stateLost                   // the lease was taken over mid-run
	stateCancelled              // Close stopped the run
	stateStopped                // the scheduler stopped, or the tick ended, before the item started
	stateError                  // a store failure kept the item from running
	stateNotDue                 // the job is not due on the table at this tick
)

// sweep tries every item once with the scheduler's workers and returns the
// items other nodes held.
func (s *Scheduler) sweep(ctx context.Context, tick int64, items []item, st *Stats) []item {
	var (
		mu   sync.Mutex
		busy []item
		wg   sync.WaitGroup
		ch   = make(chan item)
	)
	for range min(s.workers, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				res := s.runItem(ctx, tick, it)
				mu.Lock()
				switch res {
				case stateRan:
					st.Ran++
				case stateChanged:
					st.Ran++
					st.Changed++
				case stateFailed:
					st.Ran++
					st.Failed++
				case stateDone:
					st.Done++
				case stateBusy:
					st.Busy++
					busy = append(busy, it)
				case stateLost:
					st.Lost++
				case stateCancelled:
					st.Cancelled++
				case stateError:
					st.Errors++
				case stateNotDue:
					st.NotDue++
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, it := range items {
		select {
		case ch <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	return busy
}

// runItem runs one job on one table for tick unless the tick already has a
// finished run or another node holds the lease.
func (s *Scheduler) runItem(ctx context.Context, tick int64, it item) state {
	if ctx.Err() != nil || s.Tick(s.now()) != tick {
		return stateStopped
	}
	job, t := it.job.Name(), it.table
	t.Tick = tick
	log := s.log.With("job", job, "warehouse", t.Warehouse, "table", t.Ident.String(), "tick", tick)
	if p, ok := it.job.(Periodic); ok {
		due, err := p.Due(ctx, t)
		if err != nil {
			return s.storeError(ctx, log, "check schedule", err)
		}
		if !due {
			return stateNotDue
		}
	}
	done, err := s.store.MaintenanceRunFinished(ctx, t.Warehouse, t.Ident, job, tick)
	if err != nil {
		return s.storeError(ctx, log, "check run", err)
	}
	if done {
		return stateDone
	}
	// Acquire with the bookkeeping context: a Close arriving mid-statement
	// must not leave the lease taken in the database but unknown here (a
	// cancelled statement may still have committed). A Close seen after the
	// acquisition releases the lease at once.
	actx, acancel := s.bookkeeping(ctx)
	lease, ok, err := s.store.AcquireLease(actx, LeaseName(job, t.Warehouse, t.Ident), s.node, s.ttl)
	acancel()
	if err != nil {
		return s.storeError(ctx, log, "acquire lease", err)
	}
	if !ok {
		return stateBusy
	}
	log = log.With("token", lease.Token)
	if ctx.Err() != nil {
		s.release(ctx, log, lease)
		return stateStopped
	}
	run, ok, err := s.store.BeginMaintenanceRun(ctx, lease, Run{Warehouse: t.Warehouse, Table: t.Ident, Job: job, Tick: tick})
	if err != nil || !ok {
		s.release(ctx, log, lease)
		if err != nil {
			return s.storeError(ctx, log, "begin run", err)
		}
		return stateDone
	}

	start := s.now()
	res, lost, jobErr := s.execute(ctx, log, it.job, t, lease)
	if s.alive.Err() != nil {
		return stateStopped // halted: as after a crash, record nothing
	}
	end := stateRan
	switch {
	case jobErr == nil:
		run.Outcome, run.Detail = OutcomeOK, res.Summary
		if res.Changed {
			end = stateChanged
		}
	case ctx.Err() != nil && !lost:
		run.Outcome, run.Detail = OutcomeCancelled, "stopped: "+jobErr.Error()
		end = stateCancelled
	default:
		run.Outcome, run.Detail = OutcomeFailed, jobErr.Error()
		end = stateFailed
	}
	run.Detail = truncate(run.Detail, maxDetail)
	bctx, cancel := s.bookkeeping(ctx)
	defer cancel()
	if err := s.store.FinishMaintenanceRun(bctx, lease, run); err != nil {
		if floe.KindOf(err) == floe.Conflict {
			log.WarnContext(ctx, "maintenance: lease lost during the run; another node redoes it", "err", err)
			return stateLost
		}
		return s.storeError(ctx, log, "finish run", err)
	}
	took := s.now().Sub(start)
	switch end {
	case stateFailed:
		log.WarnContext(ctx, "maintenance run failed", "outcome", run.Outcome, "err", jobErr, "took", took)
	case stateCancelled:
		log.InfoContext(ctx, "maintenance run cancelled", "took", took)
	case stateChanged:
		log.InfoContext(ctx, "maintenance run", "outcome", run.Outcome, "detail", run.Detail, "took", took)
	default:
		log.DebugContext(ctx, "maintenance run", "outcome", run.Outcome, "detail", run.Detail, "took", took)
	}
	return end
}

// errLeaseLost is the cancellation cause of a job whose lease was lost.
var errLeaseLost = errors.New("maintenance lease lost to another node")

// errJobDone is the cancellation cause once a job returned.
var errJobDone = errors.New("maintenance job returned")

// execute runs the job with its lease renewed in the background. lost
// reports whether the lease was lost (the job's context was then cancelled).
func (s *Scheduler) execute(ctx context.Context, log *slog.Logger, job Job, t TableRef, l Lease) (Result, bool, error) {
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(errJobDone)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		s.renew(jctx, cancel, log, l)
	}()
	res, err := s.call(jctx, job, t)
	cancel(errJobDone)
	<-renewed
	lost := errors.Is(context.Cause(jctx), errLeaseLost)
	if err == nil && lost {
		err = errLeaseLost
	}
	return res, lost, err
}

// renew renews l every third of the TTL until ctx ends; if the lease is
// lost it cancels the job.
func (s *Scheduler) renew(ctx context.Context, cancel context.CancelCauseFunc, log *slog.Logger, l Lease) {
	for s.sleep(ctx, s.ttl/3) {
		err := s.store.RenewLease(ctx, l, s.ttl)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return
		case floe.KindOf(err) == floe.Conflict:
			log.WarnContext(ctx, "maintenance: lease lost; cancelling the job", "err", err)
			cancel(errLeaseLost)
			return
		default:
			log.WarnContext(ctx, "maintenance: cannot renew lease; retrying", "err", err)
		}
	}
}

// call runs the hook and the job, turning a panic into an error.
func (s *Scheduler) call(ctx context.Context, job Job, t TableRef) (res Result, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("maintenance job %s panicked: %v", job.Name(), r)
		}
		if s.observe != nil {
			s.observe(job.Name(), err, time.Since(start))
		}
	}()
	if s.hook != nil {
		if err := s.hook(ctx, job.Name(), t); err != nil {
			return Result{}, fmt.Errorf("hook: %w", err)
		}
	}
	return job.Run(ctx, t)
}

// bookkeeping returns a context for recording a run's end: it outlives
// Close (so that a cancelled run is still recorded and its lease released)
// but not Halt, and is bounded by a timeout.
func (s *Scheduler) bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	unhook := context.AfterFunc(s.alive, cancel)
	return bctx, func() { unhook(); cancel() }
}

func (s *Scheduler) release(ctx context.Context, log *slog.Logger, l Lease) {
	bctx, cancel := s.bookkeeping(ctx)
	defer cancel()
	if err := s.store.ReleaseLease(bctx, l); err != nil && s.alive.Err() == nil {
		log.WarnContext(ctx, "maintenance: cannot release lease; it will expire", "err", err)
	}
}

func (s *Scheduler) storeError(ctx context.Context, log *slog.Logger, op string, err error) state {
	if ctx.Err() != nil {
		return stateStopped
	}
	log.WarnContext(ctx, "maintenance: "+op+" failed", "err", err)
	return stateError
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
