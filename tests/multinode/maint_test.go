package multinode

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/maint"
)

// TestNodes_MaintenanceOncePerTick: three nodes over one PostgreSQL run
// snapshot expiry with 2 s ticks (wide enough that a loaded CI machine still
// fits a takeover inside the victim's tick). One node dies in the middle of a job
// (its scheduler halts without releasing the lease or recording the run);
// once the lease expires another node runs that job in the same tick.
// Every table gets exactly one finished run per tick, and its old snapshots
// are expired.
func TestNodes_MaintenanceOncePerTick(t *testing.T) {
	const (
		n        = 3
		interval = 2 * time.Second
		ttl      = 200 * time.Millisecond
	)
	dsn := pgtest.Fresh(t, pgtest.ServerDSN(t))
	shared := t.TempDir()
	var (
		stalledOnce atomic.Bool
		stalled     = make(chan int, 1)   // the node that stalls on the victim
		stallTick   = make(chan int64, 1) // and the tick it stalls in
	)
	// hook stalls the first run on the victim table that starts early enough
	// in its tick for another node to take over within the tick, until the
	// run's context ends.
	hook := func(node int) maint.Hook {
		return func(ctx context.Context, job string, tr maint.TableRef) error {
			if tr.Ident.Name != "victim" || time.Until(time.Unix(0, (tr.Tick+1)*int64(interval))) < 1200*time.Millisecond ||
				!stalledOnce.CompareAndSwap(false, true) {
				return nil
			}
			stallTick <- tr.Tick
			stalled <- node
			<-ctx.Done()
			return ctx.Err()
		}
	}
	var ns []*testkit.Floe
	for i := range n {
		ns = append(ns, testkit.Start(t, func(c *app.Config) {
			c.Store = dsn
			c.DataDir = shared
			c.MaintenanceInterval = interval
			c.MaintenanceLeaseTTL = ttl
			c.MaintenanceHook = hook(i)
			c.MaintenanceJobs = []string{maint.ExpireSnapshotsJob} // the tables' snapshots have no files
		}))
	}
	a := ns[0]
	tables := []string{"orders", "events", "victim"}
	var ids []catalog.Ident
	for _, name := range tables {
		ids = append(ids, createOldTable(t, a, "mnt", name))
	}

	var dead int
	var tick int64
	select {
	case dead = <-stalled:
		tick = <-stallTick
	case <-time.After(60 * time.Second):
		t.Fatal("no node ever started a run on the victim")
	}
	ns[dead].App.Maintenance().Halt() // the node dies mid-job
	deadNode := ns[dead].App.Maintenance().Node()
	alive := ns[(dead+1)%n]
	store := alive.App.Store()
	t.Logf("node %d (%s) died in tick %d", dead, deadNode, tick)

	runs := func() []maint.Run {
		rs, err := store.MaintenanceRuns(t.Context(), maint.RunFilter{Warehouse: a.Warehouse, Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	finished := func(rs []maint.Run, table string, tick int64) []maint.Run {
		var out []maint.Run
		for _, r := range rs {
			if r.Table.Name == table && r.Tick == tick && !r.Finished.IsZero() {
				out = append(out, r)
			}
		}
		return out
	}
	// Wait until every table has its run for the victim tick and the two after.
	deadline := time.Now().Add(60 * time.Second)
	for {
		rs, done := runs(), true
		for _, name := range tables {
			for k := tick; k <= tick+2; k++ {
				done = done && len(finished(rs, name, k)) > 0
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tables did not get their runs for ticks %d..%d: %+v", tick, tick+2, rs)
		}
		time.Sleep(50 * time.Millisecond)
	}

	rs := runs()
	perTick := map[string]int{}
	for _, r := range rs {
		if r.Job != maint.ExpireSnapshotsJob {
			t.Errorf("unexpected job %+v", r)
		}
		if !r.Finished.IsZero() {
			perTick[fmt.Sprintf("%s@%d", r.Table.Name, r.Tick)]++
			if r.Outcome != maint.OutcomeOK {
				t.Errorf("run %+v did not succeed", r)
			}
		}
		if r.Node == deadNode && r.Tick > tick {
			t.Errorf("the dead node ran %+v after it died", r)
		}
	}
	for k, c := range perTick {
		if c != 1 {
			t.Errorf("%s has %d finished runs, want 1", k, c)
		}
	}
	for _, name := range tables {
		for k := tick; k <= tick+2; k++ {
			if got := finished(rs, name, k); len(got) != 1 {
				t.Errorf("%s in tick %d: %d finished runs, want 1", name, k, len(got))
			}
		}
	}
	// The victim's tick: the dead node's run stays "running"; another node
	// finished the tick with the lease's next fencing token.
	var deadRun *maint.Run
	for _, r := range rs {
		if r.Table.Name == "victim" && r.Tick == tick && r.Node == deadNode {
			deadRun = &r
		}
	}
	if deadRun == nil || deadRun.Outcome != maint.OutcomeRunning || !deadRun.Finished.IsZero() {
		t.Errorf("dead node's run of the victim: %+v, want one left running", deadRun)
	}
	took := finished(rs, "victim", tick)
	if len(took) != 1 || took[0].Node == deadNode || (deadRun != nil && took[0].Token <= deadRun.Token) {
		t.Errorf("victim tick %d finished by %+v, want another node with a later token", tick, took)
	}
	// Old snapshots are gone from every table; the current one remains.
	for _, id := range ids {
		if got := snapshotIDs(t, alive, id); !slices.Equal(got, []int64{3}) {
			t.Errorf("%s keeps snapshots %v, want [3]", id, got)
		}
	}
	t.Logf("%d runs recorded over %d table-ticks", len(rs), len(perTick))
}

// createOldTable creates ns.name with snapshots 1 <- 2 <- 3 aged 10 days,
// 9 days and 1 hour, in one create transaction (old snapshots cannot be
// added to a table updated since).
func createOldTable(t *testing.T, f *testkit.Floe, ns, name string) catalog.Ident {
	t.Helper()
	const schema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}`
	var updates []string
	for i, age := range []time.Duration{240 * time.Hour, 216 * time.Hour, time.Hour} {
		updates = append(updates, `{"action":"add-snapshot","snapshot":`+testkit.SnapshotAt(testkit.EmptyList, int64(i+1), int64(i), time.Now().Add(-age))+`}`)
	}
	updates = append(updates, `{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":3}`)
	f.CreateWithUpdates(t, ns, name, schema, updates...)
	return catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name}
}

// snapshotIDs returns the sorted snapshot ids of a table.
func snapshotIDs(t *testing.T, f *testkit.Floe, id catalog.Ident) []int64 {
	t.Helper()
	var out struct {
		Metadata struct {
			Snapshots []struct {
				ID int64 `json:"snapshot-id"`
			} `json:"snapshots"`
		} `json:"metadata"`
	}
	r := f.Do(t, "GET", f.P("/namespaces/"+id.Namespace.String()+"/tables/"+id.Name), nil)
	if r.Status != 200 {
		t.Fatalf("load %s: %d", id, r.Status)
	}
	r.JSON(t, &out)
	var ids []int64
	for _, s := range out.Metadata.Snapshots {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}
