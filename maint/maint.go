// Package maint runs table maintenance in the background: every schedule
// tick, each maintenance job runs once on each table of every warehouse, on
// whichever Floe node takes the job's lease first.
//
// A Scheduler lists the tables, and for each table and job it
//
//  1. skips the pair if maintenance_runs already has a finished run for the
//     current tick (tick = floor(unix time / interval));
//  2. acquires the lease "maint/<job>/<warehouse>/<namespace key>/<table>"
//     from the Store (a busy lease means another node is on it: the pair is
//     retried until that node finishes or its lease expires);
//  3. records a running run (BeginMaintenanceRun checks again, under the
//     lease, that the tick has no finished run);
//  4. runs the job, renewing the lease every third of its TTL, and cancels
//     the job if the lease is lost to another node;
//  5. records the outcome and releases the lease in one transaction
//     (FinishMaintenanceRun), fenced by the lease's token: a node whose
//     lease was taken over cannot record a finished run.
//
// A node that dies mid-job leaves its lease to expire; another node then
// acquires it (with a higher fencing token) and runs the job for the same
// tick. At most one run per table, job and tick is ever recorded as
// finished, which a unique index in the store also enforces.
//
// Jobs implement Job. ExpireSnapshots is the first: it removes old snapshots
// from table metadata through a catalog commit.
package maint

import (
	"context"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Job is one kind of table maintenance. Run must honour ctx: it is cancelled
// when the scheduler stops or the lease is lost. Run may be called again for
// the same table and tick after a node died, so it must be idempotent (a
// second run finds nothing left to do).
type Job interface {
	// Name identifies the job in leases, logs and maintenance_runs. It must
	// be non-empty and must not contain '/'.
	Name() string
	// Run maintains one table and summarises what it did.
	Run(ctx context.Context, t TableRef) (Result, error)
}

// Periodic is implemented by jobs that run on a table less often than at
// every tick. The scheduler asks Due before taking the job's lease; a job
// that is not due is skipped without a run being recorded.
type Periodic interface {
	Job
	// Due reports whether the job should run on the table at t.Tick.
	Due(ctx context.Context, t TableRef) (bool, error)
}

// TableRef names the table a job runs on and the tick it runs for.
type TableRef struct {
	Warehouse string
	Ident     catalog.Ident
	// Tick is the schedule tick of the run: floor(unix time / interval).
	Tick int64
}

// String renders the table as "warehouse/ns.name".
func (t TableRef) String() string { return t.Warehouse + "/" + t.Ident.String() }

// Result is what a job reports about one run.
type Result struct {
	// Summary is a short human-readable account, stored as the run's detail.
	Summary string
	// Changed reports whether the run changed the table. Runs that did not
	// are logged at debug level only.
	Changed bool
}

// Hook runs before each job run with the job's context; a non-nil error fails
// the run instead of running the job. Tests use it to observe or stall runs.
type Hook func(ctx context.Context, job string, t TableRef) error

// Lease is a named, expiring lock in the store. Token is the fencing token:
// it is larger for every acquisition of the same name than for any earlier one.
type Lease struct {
	Name    string
	Holder  string
	Token   int64
	Expires time.Time
}

// Outcome is the state of a maintenance run.
type Outcome string

// Outcomes of a run. Only OutcomeOK and OutcomeFailed runs are finished and
// count as the run of their tick.
const (
	// OutcomeRunning: the run started and has not ended (or its node died).
	OutcomeRunning Outcome = "running"
	// OutcomeOK: the job completed.
	OutcomeOK Outcome = "ok"
	// OutcomeFailed: the job returned an error; the next tick tries again.
	OutcomeFailed Outcome = "failed"
	// OutcomeCancelled: the node stopped during the run and released the
	// lease; another node may run the job for the same tick.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeLost: another node took the lease over during the run.
	OutcomeLost Outcome = "lost"
)

// Finished reports whether a run with this outcome counts as its tick's run.
func (o Outcome) Finished() bool { return o == OutcomeOK || o == OutcomeFailed }

// Run is one run of a job on a table, as recorded in maintenance_runs.
type Run struct {
	ID        int64
	Warehouse string
	Table     catalog.Ident
	Job       string
	Tick      int64
	// Node is the lease holder that ran the job.
	Node string
	// Token is the fencing token of the lease the run held.
	Token    int64
	Started  time.Time
	Finished time.Time // zero unless Outcome.Finished()
	Outcome  Outcome
	Detail   string
}

// RunFilter selects runs for Store.MaintenanceRuns. Zero fields match all.
type RunFilter struct {
	Warehouse string
	Table     *catalog.Ident
	Job       string
	// Limit bounds the result (<= 0: 1000). Runs come newest first.
	Limit int
}

// Leases hands out named leases. Times are the store's clock.
type Leases interface {
	// AcquireLease takes the lease name for holder until now+ttl if it is
	// free (never taken, released, or expired). ok is false when another
	// holder has it. Each acquisition gets a larger token than the last.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (l Lease, ok bool, err error)
	// RenewLease extends l to now+ttl. Conflict if l was lost: released, or
	// acquired by anyone since (an expired lease nobody took can be renewed).
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) error
	// ReleaseLease frees l at once. Conflict if l was already lost.
	ReleaseLease(ctx context.Context, l Lease) error
}

// Store is what the scheduler needs from the metadata store.
type Store interface {
	Leases
	// Warehouses lists every warehouse.
	Warehouses(ctx context.Context) ([]catalog.Warehouse, error)
	// ListNamespaces lists the direct children of parent (see catalog.Store).
	ListNamespaces(ctx context.Context, wh string, parent catalog.Namespace, after string, limit int) ([]catalog.Namespace, error)
	// ListEntities lists the tables or views of ns (see catalog.Store).
	ListEntities(ctx context.Context, wh string, ns catalog.Namespace, kind catalog.Kind, after string, limit int) ([]string, error)

	// MaintenanceRunFinished reports whether job has a finished run on the
	// table for tick.
	MaintenanceRunFinished(ctx context.Context, wh string, table catalog.Ident, job string, tick int64) (bool, error)
	// BeginMaintenanceRun records r (Outcome running) unless its tick already
	// has a finished run, in which case ok is false. It returns r with its ID.
	// Conflict if l is no longer held.
	BeginMaintenanceRun(ctx context.Context, l Lease, r Run) (run Run, ok bool, err error)
	// FinishMaintenanceRun records r's outcome, finished time and detail and
	// releases l, in one transaction. If l was lost, r is recorded as
	// OutcomeLost (not finished), the lease is left alone, and the error is
	// Conflict.
	FinishMaintenanceRun(ctx context.Context, l Lease, r Run) error
	// PruneMaintenanceRuns deletes runs started before t and returns how many.
	PruneMaintenanceRuns(ctx context.Context, before time.Time) (int64, error)
}

// LeaseName returns the name of the lease that guards job on a table.
// Warehouse, namespace levels and table names cannot contain '/', and the
// namespace key joins levels with U+001F, so distinct tables get distinct names.
func LeaseName(job, wh string, id catalog.Ident) string {
	return "maint/" + job + "/" + wh + "/" + id.Namespace.Key() + "/" + id.Name
}

func validJobName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x1f") {
		return floe.E(floe.Invalid, "", "maintenance job name %q: must be non-empty without '/'", name)
	}
	return nil
}
