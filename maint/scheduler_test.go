package maint_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/store/sqlstore"
)

const (
	interval = time.Minute
	leaseTTL = 10 * time.Second
)

// fakeClock is a settable clock whose After channels fire when Advance
// passes their deadline.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	// afters counts After calls, so tests can wait for a goroutine to sleep.
	afters atomic.Int64
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	// 1s into a tick, so that ticks change only when a test advances.
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.afters.Add(1)
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waiters = slices.DeleteFunc(c.waiters, func(w fakeWaiter) bool {
		if w.at.After(c.now) {
			return false
		}
		w.ch <- c.now
		return true
	})
}

// advanceUntil advances the clock by step at a time, giving the goroutines
// that sleep on it a moment after each step, until cond holds.
func (c *fakeClock) advanceUntil(t *testing.T, what string, step time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out advancing the clock until %s", what)
		}
		c.Advance(step)
		time.Sleep(time.Millisecond)
	}
}

// waitFor polls cond for up to 20 s of real time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// world is several nodes' stores over one database, a shared fake clock and
// a set of tables.
type world struct {
	clock  *fakeClock
	stores []*sqlstore.Store
	tables []catalog.Ident // in warehouse "wh1" unless named in other
	other  catalog.Ident   // the one table of warehouse "wh2"
}

type backend struct {
	name string
	dsn  func(t *testing.T) string
}

func backends() []backend {
	return []backend{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "floe.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.Fresh(t, pgtest.ServerDSN(t)) }},
	}
}

// eachBackend runs fn on SQLite and (when FLOE_TEST_PG_DSN is set) PostgreSQL.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func newWorld(t *testing.T, b backend, nodes int) *world {
	t.Helper()
	w := &world{clock: newFakeClock()}
	dsn := b.dsn(t)
	for range nodes {
		s, err := sqlstore.Open(t.Context(), dsn, sqlstore.Options{Now: w.clock.Now, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		w.stores = append(w.stores, s)
	}
	s, ctx := w.stores[0], t.Context()
	must(t, s.PutWarehouse(ctx, catalog.Warehouse{Name: "wh1", Location: "file:///wh1"}))
	must(t, s.PutWarehouse(ctx, catalog.Warehouse{Name: "wh2", Location: "file:///wh2"}))
	for _, ns := range []catalog.Namespace{{"a"}, {"a", "b"}, {"empty"}} {
		must(t, s.CreateNamespace(ctx, "wh1", ns, nil))
	}
	must(t, s.CreateNamespace(ctx, "wh2", catalog.Namespace{"x"}, nil))
	w.tables = []catalog.Ident{{Namespace: catalog.Namespace{"a"}, Name: "t1"}, {Namespace: catalog.Namespace{"a"}, Name: "t2"},
		{Namespace: catalog.Namespace{"a", "b"}, Name: "t3"}}
	w.other = catalog.Ident{Namespace: catalog.Namespace{"x"}, Name: "t4"}
	create := func(wh string, id catalog.Ident, kind catalog.Kind) {
		must(t, s.SwapPointers(ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: kind, New: "file:///" + wh + "/" + id.String()}}))
	}
	for _, id := range w.tables {
		create("wh1", id, catalog.KindTable)
	}
	create("wh2", w.other, catalog.KindTable)
	create("wh1", catalog.Ident{Namespace: catalog.Namespace{"a"}, Name: "v"}, catalog.KindView) // views are not maintained
	return w
}

// all returns every table as "wh/ns.name".
func (w *world) all() []string {
	var out []string
	for _, id := range w.tables {
		out = append(out, "wh1/"+id.String())
	}
	return append(out, "wh2/"+w.other.String())
}

func (w *world) scheduler(t *testing.T, node int, jobs []maint.Job, store maint.Store, adjust ...func(*maint.Options)) *maint.Scheduler {
	t.Helper()
	if store == nil {
		store = w.stores[node]
	}
	opts := maint.Options{
		Node: fmt.Sprintf("node-%d", node), Interval: interval, LeaseTTL: leaseTTL,
		Logger: testLogger(t), Now: w.clock.Now, After: w.clock.After,
	}
	for _, f := range adjust {
		f(&opts)
	}
	s, err := maint.New(store, jobs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// runs returns every recorded run, oldest first.
func (w *world) runs(t *testing.T) []maint.Run {
	t.Helper()
	runs, err := w.stores[0].MaintenanceRuns(t.Context(), maint.RunFilter{Limit: 100000})
	must(t, err)
	slices.Reverse(runs)
	return runs
}

// recorder counts job invocations per job, table and tick, across nodes.
type recorder struct {
	mu    sync.Mutex
	calls map[string][]string // "job wh/table tick" -> nodes
}

func (r *recorder) add(job string, t maint.TableRef, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string][]string{}
	}
	k := fmt.Sprintf("%s %s %d", job, t, t.Tick)
	r.calls[k] = append(r.calls[k], node)
}

func (r *recorder) get(job, table string, tick int64) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls[fmt.Sprintf("%s %s %d", job, table, tick)])
}

// fakeJob records each run and then does what run says (by default, succeeds).
type fakeJob struct {
	name, node string
	rec        *recorder
	run        func(ctx context.Context, t maint.TableRef) (maint.Result, error)
}

func (j *fakeJob) Name() string { return j.name }

func (j *fakeJob) Run(ctx context.Context, t maint.TableRef) (maint.Result, error) {
	if j.rec != nil {
		j.rec.add(j.name, t, j.node)
	}
	if j.run != nil {
		return j.run(ctx, t)
	}
	return maint.Result{Summary: "maintained " + t.String()}, nil
}

// blockOn returns a job body that blocks on table until ctx ends, after
// signalling entered, and succeeds at once on any other table.
func blockOn(table string, entered chan<- struct{}) func(context.Context, maint.TableRef) (maint.Result, error) {
	return func(ctx context.Context, t maint.TableRef) (maint.Result, error) {
		if t.String() != table {
			return maint.Result{Summary: "quick"}, nil
		}
		entered <- struct{}{}
		<-ctx.Done()
		return maint.Result{}, ctx.Err()
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestScheduler_OncePerTick: three schedulers sharing one store, sweeping
// together tick after tick, run each of two jobs exactly once per table per
// tick, and record exactly one finished run for each.
func TestScheduler_OncePerTick(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const nodes, ticks = 3, 4
		w := newWorld(t, b, nodes)
		rec := &recorder{}
		var scheds []*maint.Scheduler
		for i := range nodes {
			jobs := []maint.Job{&fakeJob{name: "alpha", node: fmt.Sprint(i), rec: rec}, &fakeJob{name: "beta", node: fmt.Sprint(i), rec: rec}}
			scheds = append(scheds, w.scheduler(t, i, jobs, nil))
		}
		first := scheds[0].Tick(w.clock.Now())
		for tick := first; tick < first+ticks; tick++ {
			stats := make([]maint.Stats, nodes)
			var wg sync.WaitGroup
			for i, s := range scheds {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, err := s.RunOnce(t.Context())
					if err != nil {
						t.Error(err)
					}
					stats[i] = st
				}()
			}
			wg.Wait()
			ran := 0
			for _, st := range stats {
				if st.Tick != tick || st.Errors != 0 || st.Failed != 0 || st.Lost != 0 {
					t.Fatalf("tick %d: stats %+v", tick, st)
				}
				ran += st.Ran
			}
			if want := 2 * len(w.all()); ran != want {
				t.Errorf("tick %d: %d runs across nodes, want %d (%+v)", tick, ran, want, stats)
			}
			for _, table := range w.all() {
				for _, job := range []string{"alpha", "beta"} {
					if got := rec.get(job, table, tick); len(got) != 1 {
						t.Errorf("tick %d: %s ran on %s by nodes %v, want exactly one", tick, job, table, got)
					}
				}
			}
			// Sweeping again in the same tick runs nothing.
			st, err := scheds[1].RunOnce(t.Context())
			must(t, err)
			if st.Ran != 0 || st.Done != 2*len(w.all()) {
				t.Errorf("tick %d: second sweep %+v", tick, st)
			}
			w.clock.Advance(interval)
		}
		finished := map[string]int{}
		for _, r := range w.runs(t) {
			if r.Outcome != maint.OutcomeOK || r.Finished.IsZero() || !strings.HasPrefix(r.Detail, "maintained ") {
				t.Errorf("run %+v", r)
			}
			finished[fmt.Sprintf("%s %s/%s %d", r.Job, r.Warehouse, r.Table, r.Tick)]++
		}
		if want := 2 * len(w.all()) * ticks; len(finished) != want {
			t.Errorf("%d distinct finished (job, table, tick), want %d", len(finished), want)
		}
		for k, n := range finished {
			if n != 1 {
				t.Errorf("%s: %d finished runs", k, n)
			}
		}
	})
}

// TestScheduler_KilledNodeLeaseExpires: a node dies (Halt) while its job
// blocks; its lease keeps other nodes off the table until it expires, then
// another node runs the job for the same tick.
func TestScheduler_KilledNodeLeaseExpires(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		w := newWorld(t, b, 2)
		victim := "wh1/" + w.tables[0].String()
		rec := &recorder{}
		entered := make(chan struct{}, 1)
		// One worker: when the victim blocks, no other job of the node is in
		// flight (a crash mid-run would leave its lease held too).
		a := w.scheduler(t, 0, []maint.Job{&fakeJob{name: "alpha", node: "a", rec: rec, run: blockOn(victim, entered)}}, nil,
			func(o *maint.Options) { o.Workers = 1 })
		bs := w.scheduler(t, 1, []maint.Job{&fakeJob{name: "alpha", node: "b", rec: rec}}, nil)
		tick := a.Tick(w.clock.Now())

		aDone := make(chan maint.Stats)
		go func() {
			st, _ := a.RunOnce(t.Context())
			aDone <- st
		}()
		<-entered
		a.Halt() // the process dies: nothing more reaches the store
		<-aDone

		st, err := bs.RunOnce(t.Context())
		must(t, err)
		if st.Busy != 1 {
			t.Fatalf("while the dead node's lease lives: %+v, want the victim busy", st)
		}
		if got := rec.get("alpha", victim, tick); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("victim ran on %v before the lease expired", got)
		}
		w.clock.Advance(leaseTTL - time.Millisecond)
		if st, _ := bs.RunOnce(t.Context()); st.Busy != 1 {
			t.Fatalf("just before expiry: %+v", st)
		}
		w.clock.Advance(time.Millisecond)
		st, err = bs.RunOnce(t.Context())
		must(t, err)
		if st.Tick != tick || st.Ran != 1 || st.Busy != 0 {
			t.Fatalf("after expiry: %+v, want the victim run in tick %d", st, tick)
		}
		if got := rec.get("alpha", victim, tick); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("victim ran on %v", got)
		}
		var dead, done []maint.Run
		for _, r := range w.runs(t) {
			if "wh1/"+r.Table.String() != victim {
				continue
			}
			if r.Node == "node-0" {
				dead = append(dead, r)
			} else {
				done = append(done, r)
			}
		}
		if len(dead) != 1 || dead[0].Outcome != maint.OutcomeRunning || !dead[0].Finished.IsZero() {
			t.Errorf("dead node's runs %+v, want one left running", dead)
		}
		if len(done) != 1 || done[0].Outcome != maint.OutcomeOK || done[0].Tick != tick || done[0].Token != dead[0].Token+1 {
			t.Errorf("surviving node's runs %+v, want one ok in tick %d with the next token", done, tick)
		}
		if _, err := a.RunOnce(t.Context()); floe.KindOf(err) != floe.Unavailable {
			t.Errorf("RunOnce after Halt: %v", err)
		}
	})
}

// TestScheduler_CloseReleasesLease: a node shutting down gracefully cancels
// its job, records the run as cancelled and releases the lease, so another
// node runs the job in the same tick without waiting for expiry.
func TestScheduler_CloseReleasesLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		w := newWorld(t, b, 2)
		victim := "wh1/" + w.tables[1].String()
		entered := make(chan struct{}, 1)
		a := w.scheduler(t, 0, []maint.Job{&fakeJob{name: "alpha", run: blockOn(victim, entered)}}, nil)
		bs := w.scheduler(t, 1, []maint.Job{&fakeJob{name: "alpha"}}, nil)
		aDone := make(chan maint.Stats)
		go func() {
			st, _ := a.RunOnce(t.Context())
			aDone <- st
		}()
		<-entered
		must(t, a.Close())
		if st := <-aDone; st.Cancelled != 1 {
			t.Errorf("closed node's stats %+v, want one cancelled", st)
		}
		st, err := bs.RunOnce(t.Context())
		must(t, err)
		if st.Busy != 0 || st.Ran < 1 {
			t.Fatalf("after a graceful close: %+v, want the victim run at once", st)
		}
		outcomes := map[maint.Outcome]int{}
		for _, r := range w.runs(t) {
			if "wh1/"+r.Table.String() == victim {
				outcomes[r.Outcome]++
				if r.Outcome == maint.OutcomeCancelled && (!r.Finished.IsZero() || !strings.Contains(r.Detail, "context canceled")) {
					t.Errorf("cancelled run %+v", r)
				}
			}
		}
		if outcomes[maint.OutcomeCancelled] != 1 || outcomes[maint.OutcomeOK] != 1 || len(outcomes) != 2 {
			t.Errorf("victim outcomes %v", outcomes)
		}
	})
}

// flakyStore counts lease renewals and can cut them off, as a network
// partition between one node and the database would.
type flakyStore struct {
	maint.Store
	renewals    atomic.Int64
	partitioned atomic.Bool
}

func (f *flakyStore) RenewLease(ctx context.Context, l maint.Lease, ttl time.Duration) error {
	defer f.renewals.Add(1)
	if f.partitioned.Load() {
		return floe.E(floe.Unavailable, "", "partitioned")
	}
	return f.Store.RenewLease(ctx, l, ttl)
}

// TestScheduler_RenewalKeepsLease: a job running for several TTLs keeps its
// lease by renewing it, so no other node runs it meanwhile.
func TestScheduler_RenewalKeepsLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		w := newWorld(t, b, 2)
		victim := "wh1/" + w.tables[2].String()
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		fs := &flakyStore{Store: w.stores[0]}
		a := w.scheduler(t, 0, []maint.Job{&fakeJob{name: "alpha", run: func(ctx context.Context, tr maint.TableRef) (maint.Result, error) {
			if tr.String() == victim {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return maint.Result{}, ctx.Err()
				}
			}
			return maint.Result{Summary: "slow"}, nil
		}}}, fs)
		bs := w.scheduler(t, 1, []maint.Job{&fakeJob{name: "alpha"}}, nil)
		aDone := make(chan maint.Stats)
		go func() {
			st, _ := a.RunOnce(t.Context())
			aDone <- st
		}()
		<-entered
		start := w.clock.Now()
		for i := int64(1); i <= 9; i++ { // about 3 TTLs: renewals every third
			w.clock.advanceUntil(t, fmt.Sprintf("renewal %d", i), leaseTTL/50, func() bool { return fs.renewals.Load() >= i })
		}
		if d := w.clock.Now().Sub(start); d < 3*leaseTTL {
			t.Fatalf("only %s passed over 9 renewals", d)
		}
		st, err := bs.RunOnce(t.Context())
		must(t, err)
		if st.Busy != 1 {
			t.Fatalf("another node got past a renewed lease: %+v", st)
		}
		close(release)
		if st := <-aDone; st.Ran < 1 || st.Lost != 0 {
			t.Errorf("slow job's node stats %+v", st)
		}
	})
}

// TestScheduler_LeaseLostMidJob: a node cut off from the database cannot
// renew; another node takes the expired lease and runs the job; once the
// first node reconnects, its renewal fails, its job is cancelled and its run
// is recorded as lost, never as a second finished run.
func TestScheduler_LeaseLostMidJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		w := newWorld(t, b, 2)
		victim := "wh2/" + w.other.String()
		entered := make(chan struct{}, 1)
		fs := &flakyStore{Store: w.stores[0]}
		a := w.scheduler(t, 0, []maint.Job{&fakeJob{name: "alpha", run: blockOn(victim, entered)}}, fs)
		bs := w.scheduler(t, 1, []maint.Job{&fakeJob{name: "alpha"}}, nil)
		tick := a.Tick(w.clock.Now())
		aDone := make(chan maint.Stats)
		go func() {
			st, _ := a.RunOnce(t.Context())
			aDone <- st
		}()
		<-entered
		fs.partitioned.Store(true)
		start := w.clock.Now()
		w.clock.advanceUntil(t, "the lease expired unrenewed", leaseTTL/50, func() bool {
			return fs.renewals.Load() >= 1 && w.clock.Now().Sub(start) >= leaseTTL
		})
		st, err := bs.RunOnce(t.Context())
		must(t, err)
		if st.Ran < 1 || st.Busy != 0 {
			t.Fatalf("after the partitioned node's lease expired: %+v", st)
		}
		fs.partitioned.Store(false)
		n := fs.renewals.Load()
		w.clock.advanceUntil(t, "a renewal after the partition", leaseTTL/50, func() bool { return fs.renewals.Load() > n })
		if st := <-aDone; st.Lost != 1 {
			t.Errorf("partitioned node's stats %+v, want one lost run", st)
		}
		var outcomes []string
		for _, r := range w.runs(t) {
			if r.Warehouse+"/"+r.Table.String() == victim && r.Tick == tick {
				outcomes = append(outcomes, r.Node+":"+string(r.Outcome))
			}
		}
		slices.Sort(outcomes)
		if want := []string{"node-0:lost", "node-1:ok"}; !slices.Equal(outcomes, want) {
			t.Errorf("victim runs %v, want %v", outcomes, want)
		}
	})
}

// TestScheduler_Outcomes: what a run records when the job fails, panics or
// its hook refuses; a failed run still counts as its tick's run.
func TestScheduler_Outcomes(t *testing.T) {
	w := newWorld(t, backends()[0], 1)
	boom := errors.New("boom")
	for i, tt := range []struct {
		name    string
		run     func(context.Context, maint.TableRef) (maint.Result, error)
		hook    maint.Hook
		outcome maint.Outcome
		detail  string
	}{
		{name: "OK", outcome: maint.OutcomeOK, detail: "maintained "},
		{name: "Error", run: func(context.Context, maint.TableRef) (maint.Result, error) { return maint.Result{}, boom },
			outcome: maint.OutcomeFailed, detail: "boom"},
		{name: "Panic", run: func(context.Context, maint.TableRef) (maint.Result, error) { panic("kaboom") },
			outcome: maint.OutcomeFailed, detail: "panicked: kaboom"},
		{name: "HookRefuses", hook: func(context.Context, string, maint.TableRef) error { return boom },
			outcome: maint.OutcomeFailed, detail: "hook: boom"},
		{name: "LongDetail", run: func(context.Context, maint.TableRef) (maint.Result, error) {
			return maint.Result{Summary: strings.Repeat("x", 5000)}, nil
		}, outcome: maint.OutcomeOK, detail: "xxx"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := fmt.Sprintf("job%d", i)
			s, err := maint.New(w.stores[0], []maint.Job{&fakeJob{name: job, run: tt.run}}, maint.Options{
				Node: "n", Interval: interval, LeaseTTL: leaseTTL, Hook: tt.hook, Now: w.clock.Now, After: w.clock.After})
			must(t, err)
			defer s.Close()
			st, err := s.RunOnce(t.Context())
			must(t, err)
			if st.Ran != len(w.all()) {
				t.Errorf("stats %+v", st)
			}
			runs, err := w.stores[0].MaintenanceRuns(t.Context(), maint.RunFilter{Job: job})
			must(t, err)
			for _, r := range runs {
				if r.Outcome != tt.outcome || r.Finished.IsZero() || !strings.Contains(r.Detail, tt.detail) || len(r.Detail) > 2100 {
					t.Errorf("run %+v, want outcome %s with detail containing %q", r, tt.outcome, tt.detail)
				}
			}
			if st, _ := s.RunOnce(t.Context()); st.Ran != 0 || st.Done != len(w.all()) {
				t.Errorf("second sweep in the tick %+v: a finished run, even failed, is the tick's run", st)
			}
		})
	}
}

// TestScheduler_Loop: Start runs a pass at each tick boundary, not before,
// and Close stops it.
func TestScheduler_Loop(t *testing.T) {
	w := newWorld(t, backends()[0], 1)
	rec := &recorder{}
	s := w.scheduler(t, 0, []maint.Job{&fakeJob{name: "alpha", node: "0", rec: rec}}, nil)
	tick := s.Tick(w.clock.Now())
	s.Start(t.Context())
	count := func() int { // finished runs
		n := 0
		for _, r := range w.runs(t) {
			if !r.Finished.IsZero() {
				n++
			}
		}
		return n
	}
	waitFor(t, "the loop to sleep", func() bool { return w.clock.afters.Load() > 0 })
	if n := count(); n != 0 {
		t.Fatalf("%d runs before the first tick boundary", n)
	}
	for i := int64(1); i <= 3; i++ {
		// If the loop is not asleep yet, it sees the new tick when it looks.
		w.clock.Advance(interval)
		waitFor(t, fmt.Sprintf("the pass of tick %d", tick+i), func() bool { return count() == int(i)*len(w.all()) })
		for _, table := range w.all() {
			if got := rec.get("alpha", table, tick+i); len(got) != 1 {
				t.Errorf("tick %d: %s ran %d times", tick+i, table, len(got))
			}
		}
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

func TestNew_Invalid(t *testing.T) {
	job := func(name string) maint.Job { return &fakeJob{name: name} }
	for _, tt := range []struct {
		name string
		jobs []maint.Job
		opts maint.Options
	}{
		{"EmptyJobName", []maint.Job{job("")}, maint.Options{}},
		{"SlashInJobName", []maint.Job{job("a/b")}, maint.Options{}},
		{"DuplicateJob", []maint.Job{job("a"), job("a")}, maint.Options{}},
		{"NegativeInterval", []maint.Job{job("a")}, maint.Options{Interval: -time.Second}},
		{"NegativeTTL", []maint.Job{job("a")}, maint.Options{LeaseTTL: -time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := maint.New(nil, tt.jobs, tt.opts); floe.KindOf(err) != floe.Invalid {
				t.Errorf("New: %v, want Invalid", err)
			}
		})
	}
	s, err := maint.New(nil, nil, maint.Options{})
	must(t, err)
	if s.Interval() != maint.DefaultInterval || s.Node() == "" {
		t.Errorf("defaults: interval %s, node %q", s.Interval(), s.Node())
	}
}
