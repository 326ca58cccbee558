package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/maint"
)

// testLeases covers leases (maint.Leases) and the maintenance run record
// they fence (maint.Store). The subtests share one store and clock and run
// in order, each on its own lease names.
func testLeases(t *testing.T, e *env) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"AcquireRenewRelease", testLeaseLifecycle},
		{"Invalid", testLeaseInvalid},
		{"Expiry", testLeaseExpiry},
		{"RenewExpiredUntaken", testLeaseRenewExpired},
		{"Race", testLeaseRace},
		{"FencingTokens", testLeaseFencing},
		{"Warehouses", testMaintWarehouses},
		{"Runs", testMaintRuns},
		{"RunsFenced", testMaintRunsFenced},
		{"RunsOncePerTick", testMaintRunsOnce},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, e) })
	}
}

const leaseTTL = 10 * time.Second

func (e *env) acquire(t *testing.T, name, holder string) (maint.Lease, bool) {
	t.Helper()
	l, ok, err := e.s.AcquireLease(e.ctx, name, holder, leaseTTL)
	must(t, err)
	if ok && (l.Name != name || l.Holder != holder || l.Token <= 0) {
		t.Fatalf("AcquireLease(%q, %q) = %+v", name, holder, l)
	}
	return l, ok
}

func (e *env) mustAcquire(t *testing.T, name, holder string) maint.Lease {
	t.Helper()
	l, ok := e.acquire(t, name, holder)
	if !ok {
		t.Fatalf("AcquireLease(%q, %q): not acquired", name, holder)
	}
	return l
}

func (e *env) mustNotAcquire(t *testing.T, name, holder string) {
	t.Helper()
	if l, ok := e.acquire(t, name, holder); ok {
		t.Fatalf("AcquireLease(%q, %q) = %+v while another holder has it", name, holder, l)
	}
}

func testLeaseLifecycle(t *testing.T, e *env) {
	a := e.mustAcquire(t, "life", "node-a")
	if a.Token != 1 {
		t.Errorf("first token = %d, want 1", a.Token)
	}
	if want := e.clock.Now().Add(leaseTTL).Truncate(time.Microsecond); !a.Expires.Equal(want) {
		t.Errorf("Expires = %v, want %v", a.Expires, want)
	}
	e.mustNotAcquire(t, "life", "node-b")
	e.mustNotAcquire(t, "life", "node-a") // not re-entrant
	must(t, e.s.RenewLease(e.ctx, a, leaseTTL))
	other := e.mustAcquire(t, "life-other", "node-b") // names are independent
	must(t, e.s.ReleaseLease(e.ctx, a))
	wantErr(t, e.s.ReleaseLease(e.ctx, a), floe.Conflict, "lease", "lease life was lost")
	wantErr(t, e.s.RenewLease(e.ctx, a, leaseTTL), floe.Conflict, "lease", "lease life was lost")
	b := e.mustAcquire(t, "life", "node-b") // free at once after release, no clock change
	if b.Token != 2 {
		t.Errorf("token after release and reacquire = %d, want 2", b.Token)
	}
	wantErr(t, e.s.RenewLease(e.ctx, maint.Lease{Name: "life", Holder: "node-a", Token: b.Token}, leaseTTL), floe.Conflict, "lease", "")
	wantErr(t, e.s.RenewLease(e.ctx, maint.Lease{Name: "never", Holder: "node-a", Token: 1}, leaseTTL), floe.Conflict, "lease", "")
	must(t, e.s.ReleaseLease(e.ctx, other))
}

func testLeaseInvalid(t *testing.T, e *env) {
	for _, tt := range []struct {
		name, holder string
		ttl          time.Duration
	}{
		{"", "h", time.Second},
		{"n", "", time.Second},
		{"n", "h", 0},
		{"n", "h", -time.Second},
	} {
		_, ok, err := e.s.AcquireLease(e.ctx, tt.name, tt.holder, tt.ttl)
		if ok {
			t.Errorf("AcquireLease(%q, %q, %s) acquired", tt.name, tt.holder, tt.ttl)
		}
		wantErr(t, err, floe.Invalid, "lease", "")
	}
	l := e.mustAcquire(t, "invalid-ttl", "h")
	wantErr(t, e.s.RenewLease(e.ctx, l, 0), floe.Invalid, "lease", "")
	must(t, e.s.ReleaseLease(e.ctx, l))
}

func testLeaseExpiry(t *testing.T, e *env) {
	a := e.mustAcquire(t, "exp", "node-a")
	e.clock.Advance(leaseTTL - time.Millisecond)
	e.mustNotAcquire(t, "exp", "node-b")
	e.clock.Advance(time.Millisecond) // expiry == now: expired
	b := e.mustAcquire(t, "exp", "node-b")
	if b.Token != a.Token+1 {
		t.Errorf("token after expiry = %d, want %d", b.Token, a.Token+1)
	}
	wantErr(t, e.s.RenewLease(e.ctx, a, leaseTTL), floe.Conflict, "lease", "lease exp was lost")
	wantErr(t, e.s.ReleaseLease(e.ctx, a), floe.Conflict, "lease", "lease exp was lost")
	e.mustNotAcquire(t, "exp", "node-a") // a's failed release did not free b's lease
	// Renewal keeps b's lease past its first expiry.
	e.clock.Advance(leaseTTL / 2)
	must(t, e.s.RenewLease(e.ctx, b, leaseTTL))
	e.clock.Advance(leaseTTL - time.Second)
	e.mustNotAcquire(t, "exp", "node-c")
	must(t, e.s.ReleaseLease(e.ctx, b))
}

func testLeaseRenewExpired(t *testing.T, e *env) {
	a := e.mustAcquire(t, "renew-expired", "node-a")
	e.clock.Advance(3 * leaseTTL)
	must(t, e.s.RenewLease(e.ctx, a, leaseTTL)) // nobody took it: still a's
	e.mustNotAcquire(t, "renew-expired", "node-b")
	must(t, e.s.ReleaseLease(e.ctx, a))
}

// testLeaseRace has 16 goroutines race for one lease three times: while it
// does not exist, once it expired, and once it was released. Exactly one
// wins each round, with the next token.
func testLeaseRace(t *testing.T, e *env) {
	const racers = 16
	race := func(round int) maint.Lease {
		var mu sync.Mutex
		var won []maint.Lease
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, ok, err := e.s.AcquireLease(e.ctx, "race", fmt.Sprintf("node-%d-%d", round, i), leaseTTL)
				if err != nil {
					t.Errorf("round %d racer %d: %v", round, i, err)
					return
				}
				if ok {
					mu.Lock()
					won = append(won, l)
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("round %d: %d racers acquired the lease, want exactly 1: %+v", round, len(won), won)
		}
		if won[0].Token != int64(round) {
			t.Errorf("round %d: token %d, want %d", round, won[0].Token, round)
		}
		return won[0]
	}
	race(1)
	e.clock.Advance(leaseTTL)
	l := race(2)
	must(t, e.s.ReleaseLease(e.ctx, l))
	l = race(3)
	must(t, e.s.ReleaseLease(e.ctx, l))
}

// testLeaseFencing checks that tokens grow on every acquisition, whatever
// freed the lease before it.
func testLeaseFencing(t *testing.T, e *env) {
	var last int64
	for i := range 12 {
		l := e.mustAcquire(t, "fence", fmt.Sprintf("node-%d", i%3))
		if l.Token <= last {
			t.Fatalf("acquisition %d: token %d after %d", i, l.Token, last)
		}
		last = l.Token
		switch i % 3 {
		case 0:
			must(t, e.s.ReleaseLease(e.ctx, l))
		case 1:
			e.clock.Advance(leaseTTL)
		case 2:
			must(t, e.s.RenewLease(e.ctx, l, time.Second))
			e.clock.Advance(time.Second)
		}
	}
}

func testMaintWarehouses(t *testing.T, e *env) {
	got, err := e.s.Warehouses(e.ctx)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("Warehouses on an empty store = %+v", got)
	}
	for _, n := range []string{"w2", "w1"} {
		must(t, e.s.PutWarehouse(e.ctx, catalog.Warehouse{Name: n, Location: "file:///" + n}))
	}
	got, err = e.s.Warehouses(e.ctx)
	must(t, err)
	want := []catalog.Warehouse{{Name: "w1", Location: "file:///w1"}, {Name: "w2", Location: "file:///w2"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Warehouses = %+v, want %+v", got, want)
	}
}

func testMaintRuns(t *testing.T, e *env) {
	tbl := ident("t", "a", "b")
	l := e.mustAcquire(t, "runs", "node-a")
	r, ok, err := e.s.BeginMaintenanceRun(e.ctx, l, maint.Run{Warehouse: wh, Table: tbl, Job: "expire", Tick: 7})
	must(t, err)
	if !ok || r.ID == 0 || r.Outcome != maint.OutcomeRunning || r.Node != "node-a" || r.Token != l.Token ||
		!r.Started.Equal(e.clock.Now().UTC().Truncate(time.Microsecond)) {
		t.Fatalf("BeginMaintenanceRun = %+v, %v", r, ok)
	}
	done, err := e.s.MaintenanceRunFinished(e.ctx, wh, tbl, "expire", 7)
	must(t, err)
	if done {
		t.Fatal("a running run counts as finished")
	}
	e.clock.Advance(time.Second)
	r.Outcome, r.Detail = maint.OutcomeOK, "expired 2 snapshots"
	must(t, e.s.FinishMaintenanceRun(e.ctx, l, r))
	e.mustAcquire(t, "runs", "node-b") // finishing released the lease
	for _, tt := range []struct {
		tbl  catalog.Ident
		job  string
		tick int64
		want bool
	}{
		{tbl, "expire", 7, true},
		{tbl, "expire", 8, false},
		{tbl, "compact", 7, false},
		{ident("t", "a"), "expire", 7, false},
		{ident("u", "a", "b"), "expire", 7, false},
	} {
		done, err := e.s.MaintenanceRunFinished(e.ctx, wh, tt.tbl, tt.job, tt.tick)
		must(t, err)
		if done != tt.want {
			t.Errorf("MaintenanceRunFinished(%s, %s, %d) = %v, want %v", tt.tbl, tt.job, tt.tick, done, tt.want)
		}
	}
	// A tick with a finished run cannot begin another.
	l2 := e.mustAcquire(t, "runs-2", "node-b")
	if _, ok, err := e.s.BeginMaintenanceRun(e.ctx, l2, maint.Run{Warehouse: wh, Table: tbl, Job: "expire", Tick: 7}); err != nil || ok {
		t.Fatalf("BeginMaintenanceRun on a finished tick = %v, %v", ok, err)
	}
	// A failed run finishes its tick too.
	f, ok, err := e.s.BeginMaintenanceRun(e.ctx, l2, maint.Run{Warehouse: wh, Table: tbl, Job: "expire", Tick: 8})
	must(t, err)
	if !ok {
		t.Fatal("BeginMaintenanceRun tick 8: not begun")
	}
	f.Outcome, f.Detail = maint.OutcomeFailed, "boom"
	must(t, e.s.FinishMaintenanceRun(e.ctx, l2, f))

	runs, err := e.s.MaintenanceRuns(e.ctx, maint.RunFilter{Warehouse: wh, Table: &tbl, Job: "expire"})
	must(t, err)
	if len(runs) != 2 || runs[0].ID != f.ID || runs[1].ID != r.ID {
		t.Fatalf("MaintenanceRuns = %+v, want runs %d then %d", runs, f.ID, r.ID)
	}
	got := runs[1]
	if got.Warehouse != wh || got.Table.String() != tbl.String() || got.Job != "expire" || got.Tick != 7 ||
		got.Node != "node-a" || got.Token != l.Token || got.Outcome != maint.OutcomeOK || got.Detail != "expired 2 snapshots" ||
		!got.Started.Equal(r.Started) || !got.Finished.Equal(r.Started.Add(time.Second)) {
		t.Errorf("run = %+v, begun as %+v", got, r)
	}
	if runs[0].Outcome != maint.OutcomeFailed || runs[0].Finished.IsZero() {
		t.Errorf("failed run = %+v", runs[0])
	}
	if runs, _ := e.s.MaintenanceRuns(e.ctx, maint.RunFilter{Limit: 1}); len(runs) != 1 || runs[0].ID != f.ID {
		t.Errorf("MaintenanceRuns limit 1 = %+v", runs)
	}
	if runs, _ := e.s.MaintenanceRuns(e.ctx, maint.RunFilter{Job: "compact"}); len(runs) != 0 {
		t.Errorf("MaintenanceRuns of another job = %+v", runs)
	}

	// Pruning removes runs by start time.
	for _, tt := range []struct {
		before time.Time
		want   int64
		left   int
	}{
		{r.Started, 0, 2},
		{r.Started.Add(time.Microsecond), 1, 1},
		{f.Started.Add(time.Microsecond), 1, 0},
	} {
		n, err := e.s.PruneMaintenanceRuns(e.ctx, tt.before)
		must(t, err)
		runs, err := e.s.MaintenanceRuns(e.ctx, maint.RunFilter{})
		must(t, err)
		if n != tt.want || len(runs) != tt.left {
			t.Errorf("PruneMaintenanceRuns(%v) removed %d, left %d, want %d and %d", tt.before, n, len(runs), tt.want, tt.left)
		}
	}
}

// testMaintRunsFenced: a node whose lease was taken over can neither begin
// nor finish a run; its run is recorded as lost and does not count.
func testMaintRunsFenced(t *testing.T, e *env) {
	tbl := ident("fenced", "a")
	a := e.mustAcquire(t, "fenced", "node-a")
	ra, ok, err := e.s.BeginMaintenanceRun(e.ctx, a, maint.Run{Warehouse: wh, Table: tbl, Job: "expire", Tick: 1})
	must(t, err)
	if !ok {
		t.Fatal("not begun")
	}
	e.clock.Advance(leaseTTL) // node-a stalls past its lease
	b := e.mustAcquire(t, "fenced", "node-b")
	_, _, err = e.s.BeginMaintenanceRun(e.ctx, a, maint.Run{Warehouse: wh, Table: tbl, Job: "expire", Tick: 2})
	wantErr(t, err, floe.Conflict, "lease", "")
	rb, ok, err := e.s.BeginMaintenanceRun(e.ctx, b, maint.Run{Warehouse: wh, Table: tbl, Job: "expire", Tick: 1})
	must(t, err)
	if !ok {
		t.Fatal("node-b could not begin the tick node-a lost")
	}
	ra.Outcome, ra.Detail = maint.OutcomeOK, "late"
	wantErr(t, e.s.FinishMaintenanceRun(e.ctx, a, ra), floe.Conflict, "lease", "lease fenced was lost")
	if done, _ := e.s.MaintenanceRunFinished(e.ctx, wh, tbl, "expire", 1); done {
		t.Fatal("the lost run counts as finished")
	}
	rb.Outcome = maint.OutcomeOK
	must(t, e.s.FinishMaintenanceRun(e.ctx, b, rb))
	runs, err := e.s.MaintenanceRuns(e.ctx, maint.RunFilter{Table: &tbl})
	must(t, err)
	outcomes := map[string]maint.Outcome{}
	for _, r := range runs {
		outcomes[r.Node] = r.Outcome
		if r.Node == "node-a" && (!r.Finished.IsZero() || r.Detail != "late") {
			t.Errorf("lost run = %+v", r)
		}
	}
	if outcomes["node-a"] != maint.OutcomeLost || outcomes["node-b"] != maint.OutcomeOK || len(runs) != 2 {
		t.Errorf("runs = %+v", runs)
	}
}

// testMaintRunsOnce: the store refuses a second finished run for a tick even
// when two runs began under different leases (which the scheduler never does).
func testMaintRunsOnce(t *testing.T, e *env) {
	tbl := ident("once", "a")
	var runs []maint.Run
	var leases []maint.Lease
	for _, name := range []string{"once-1", "once-2"} {
		l := e.mustAcquire(t, name, "node-"+name)
		r, ok, err := e.s.BeginMaintenanceRun(e.ctx, l, maint.Run{Warehouse: wh, Table: tbl, Job: "expire", Tick: 3})
		must(t, err)
		if !ok {
			t.Fatal("not begun")
		}
		r.Outcome = maint.OutcomeOK
		runs, leases = append(runs, r), append(leases, l)
	}
	must(t, e.s.FinishMaintenanceRun(e.ctx, leases[0], runs[0]))
	wantErr(t, e.s.FinishMaintenanceRun(e.ctx, leases[1], runs[1]), floe.Conflict, "maintenance run", "")
	// The refused finish rolled back: the second lease is still held.
	e.mustNotAcquire(t, "once-2", "node-x")
	// Outcomes that do not finish a run may be recorded any number of times.
	runs[1].Outcome = maint.OutcomeCancelled
	must(t, e.s.FinishMaintenanceRun(e.ctx, leases[1], runs[1]))
	e.mustAcquire(t, "once-2", "node-x")
}
