package maint

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
)

// Table properties that tune snapshot expiry, as in Iceberg.
const (
	// PropMaxSnapshotAge is how old (in milliseconds) a snapshot may grow
	// before it expires, unless it must be kept for another reason.
	PropMaxSnapshotAge = table.MaxSnapshotAgeMsKey // history.expire.max-snapshot-age-ms
	// PropMinSnapshotsToKeep is how many of its newest ancestors each branch
	// keeps whatever their age.
	PropMinSnapshotsToKeep = table.MinSnapshotsToKeepKey // history.expire.min-snapshots-to-keep
	// PropGCEnabled set to false turns expiry off for the table (its files
	// may be shared with other tables).
	PropGCEnabled = table.GCEnabledKey // gc.enabled
)

// Defaults of Retention, as in Iceberg.
const (
	// DefaultMaxSnapshotAge is how old a snapshot may grow by default: 5 days.
	DefaultMaxSnapshotAge = 5 * 24 * time.Hour
	// DefaultMinSnapshotsToKeep is how many snapshots each branch keeps by default.
	DefaultMinSnapshotsToKeep = 1
)

// Retention says which snapshots a table keeps.
type Retention struct {
	// MaxAge is the age past which a snapshot expires unless it is a branch
	// head, a tag, or one of the MinKeep newest ancestors of a branch.
	MaxAge time.Duration
	// MinKeep is how many of its newest ancestors each branch keeps.
	MinKeep int
}

// For returns r overridden by a table's properties PropMaxSnapshotAge and
// PropMinSnapshotsToKeep. Malformed or negative values are ignored.
func (r Retention) For(props iceberg.Properties) Retention {
	if v, err := strconv.ParseInt(props[PropMaxSnapshotAge], 10, 64); err == nil && v >= 0 {
		r.MaxAge = time.Duration(v) * time.Millisecond
	}
	if v, err := strconv.Atoi(props[PropMinSnapshotsToKeep]); err == nil && v >= 0 {
		r.MinKeep = v
	}
	return r
}

// ExpiredSnapshots returns, in metadata order, the ids of the snapshots of md
// that retention r (already resolved for the table, see Retention.For) lets
// expire at now. It follows Iceberg's ExpireSnapshots:
//   - every snapshot a branch or tag points at is kept, so the current
//     snapshot (main's head) always is;
//   - each branch keeps its ancestors, newest first, while they are younger
//     than the branch's max-snapshot-age-ms (default r.MaxAge) or fewer than
//     its min-snapshots-to-keep (default r.MinKeep) have been kept;
//   - snapshots that are no ancestor of any branch (nor tagged) are kept
//     while younger than r.MaxAge.
//
// Branch and tag refs themselves are never removed.
func ExpiredSnapshots(md table.Metadata, now time.Time, r Retention) []int64 {
	nowMs := now.UnixMilli()
	lookup := func(id int64) *table.Snapshot { return md.SnapshotByID(id) }
	keep := map[int64]bool{}
	referenced := map[int64]bool{}
	if cur := md.CurrentSnapshot(); cur != nil {
		keep[cur.SnapshotID] = true
	}
	for _, ref := range md.Refs() {
		keep[ref.SnapshotID] = true
		referenced[ref.SnapshotID] = true
		if ref.SnapshotRefType != table.BranchRef {
			continue
		}
		maxAge, minKeep := r.MaxAge.Milliseconds(), r.MinKeep
		if ref.MaxSnapshotAgeMs != nil {
			maxAge = *ref.MaxSnapshotAgeMs
		}
		if ref.MinSnapshotsToKeep != nil {
			minKeep = *ref.MinSnapshotsToKeep
		}
		kept, stopped := 0, false
		for _, s := range table.AncestorsOf(ref.SnapshotID, lookup) {
			referenced[s.SnapshotID] = true // even past the stop: not "unreferenced"
			if stopped || kept >= minKeep && nowMs-s.TimestampMs > maxAge {
				stopped = true // like Iceberg, keep nothing past the first expired ancestor
				continue
			}
			keep[s.SnapshotID] = true
			kept++
		}
	}
	cutoff := nowMs - r.MaxAge.Milliseconds()
	var out []int64
	for _, s := range md.Snapshots() {
		switch {
		case keep[s.SnapshotID]:
		case !referenced[s.SnapshotID] && s.TimestampMs >= cutoff:
		default:
			out = append(out, s.SnapshotID)
		}
	}
	return out
}

// Tables is what ExpireSnapshots needs from the catalog (*catalog.Catalog).
type Tables interface {
	LoadTable(ctx context.Context, wh string, id catalog.Ident) (*catalog.TableState, error)
	CommitTable(ctx context.Context, wh string, tc catalog.TableCommit) (*catalog.TableState, error)
}

// ExpireOptions configures ExpireSnapshots. Zero values mean defaults.
type ExpireOptions struct {
	// Retention is the default retention; table properties override it
	// (default: 5 days, at least 1 snapshot per branch).
	Retention Retention
	// Retries is how often a commit that lost to a concurrent writer is
	// recomputed on the writer's metadata and tried again (default 4).
	Retries int
	// Namespaces, if set, supplies namespace properties: retention
	// properties set on a namespace apply to its tables (a table's own
	// override them), and floe.maintenance.snapshot.enabled=false turns
	// expiry off.
	Namespaces Namespaces
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock snapshot ages are measured by; nil means time.Now.
	Now func() time.Time
}

// ExpireSnapshots is the job that removes expired snapshots (see
// ExpiredSnapshots) from table metadata with a catalog commit. It removes
// no file: manifests and data files that only expired snapshots referenced
// stay until the orphan-file job deletes them.
type ExpireSnapshots struct {
	tables  Tables
	ret     Retention
	nss     Namespaces
	retries int
	log     *slog.Logger
	now     func() time.Time
}

// ExpireSnapshotsJob is the name of the ExpireSnapshots job.
const ExpireSnapshotsJob = "expire-snapshots"

// NewExpireSnapshots returns the snapshot expiry job over tables.
func NewExpireSnapshots(tables Tables, opts ExpireOptions) *ExpireSnapshots {
	if opts.Retention.MaxAge <= 0 {
		opts.Retention.MaxAge = DefaultMaxSnapshotAge
	}
	if opts.Retention.MinKeep <= 0 {
		opts.Retention.MinKeep = DefaultMinSnapshotsToKeep
	}
	if opts.Retries <= 0 {
		opts.Retries = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &ExpireSnapshots{tables: tables, ret: opts.Retention, nss: opts.Namespaces, retries: opts.Retries, log: opts.Logger, now: opts.Now}
}

// Name returns "expire-snapshots".
func (j *ExpireSnapshots) Name() string { return ExpireSnapshotsJob }

// Run expires the table's old snapshots. The commit asserts the table's
// UUID and the snapshot of every branch and tag (and that no ref was added)
// as loaded, so it never undoes a concurrent writer's commit: when a writer
// got in first, the job reloads the table, recomputes and tries again.
func (j *ExpireSnapshots) Run(ctx context.Context, t TableRef) (Result, error) {
	rep, err := j.expire(ctx, t.Warehouse, t.Ident, false)
	if err != nil {
		return Result{}, err
	}
	return rep.result(), nil
}

// ExpireTable expires the old snapshots of table id now. With dryRun it
// only reports which would expire.
func (j *ExpireSnapshots) ExpireTable(ctx context.Context, wh string, id catalog.Ident, dryRun bool) (Report, error) {
	return j.expire(ctx, wh, id, dryRun)
}

func (j *ExpireSnapshots) expire(ctx context.Context, wh string, id catalog.Ident, dryRun bool) (Report, error) {
	t := TableRef{Warehouse: wh, Ident: id}
	rep := Report{Job: ExpireSnapshotsJob, DryRun: dryRun, Stats: map[string]int64{}}
	for attempt := 0; ; attempt++ {
		st, err := j.tables.LoadTable(ctx, t.Warehouse, t.Ident)
		if floe.KindOf(err) == floe.NotFound {
			rep.Summary = "table no longer exists"
			return rep, nil
		}
		if err != nil {
			return rep, fmt.Errorf("expire snapshots of %s: load: %w", t, err)
		}
		md := st.Metadata
		if !md.Properties().GetBool(PropGCEnabled, true) {
			rep.Summary = PropGCEnabled + " is false: snapshots are kept"
			return rep, nil
		}
		p, err := Resolver{Namespaces: j.nss, Base: Policy{ExpireEnabled: true, Retention: j.ret}}.Policy(ctx, wh, id, md.Properties())
		if err != nil {
			return rep, fmt.Errorf("expire snapshots of %s: %w", t, err)
		}
		if !p.ExpireEnabled {
			rep.Summary = "snapshot expiry is off (" + PropExpireEnabled + " or gc.enabled)"
			return rep, nil
		}
		ret := p.Retention
		ids := ExpiredSnapshots(md, j.now(), ret)
		total := len(md.Snapshots())
		rep.Stats["snapshots"] = int64(total)
		rep.Stats["expired_snapshots"] = int64(len(ids))
		if len(ids) == 0 {
			rep.Summary = fmt.Sprintf("nothing to expire (%d snapshots)", total)
			return rep, nil
		}
		if dryRun {
			rep.Summary = fmt.Sprintf("would expire %d of %d snapshots (max age %s, min %d per branch)", len(ids), total, ret.MaxAge, ret.MinKeep)
			return rep, nil
		}
		_, err = j.tables.CommitTable(ctx, t.Warehouse, catalog.TableCommit{
			Ident:        t.Ident,
			Requirements: expiryRequirements(md),
			Updates:      table.Updates{table.NewRemoveSnapshotsUpdate(ids, false)},
		})
		switch {
		case err == nil:
			rep.Changed = true
			rep.Summary = fmt.Sprintf("expired %d of %d snapshots (max age %s, min %d per branch)",
				len(ids), total, ret.MaxAge, ret.MinKeep)
			return rep, nil
		case floe.KindOf(err) == floe.NotFound:
			rep.Summary = "table no longer exists"
			return rep, nil
		case floe.KindOf(err) == floe.Conflict && attempt < j.retries:
			j.log.DebugContext(ctx, "expire snapshots: a concurrent commit won; retrying", "table", t.String(), "attempt", attempt+1, "err", err)
			if err := lake.Pause(ctx, time.Duration(attempt+1)*10*time.Millisecond); err != nil {
				return rep, err
			}
		default:
			return rep, fmt.Errorf("expire snapshots of %s: commit: %w", t, err)
		}
	}
}

// expiryRequirements pins the state the expiry was computed on: the table's
// UUID, every branch and tag's snapshot (main's as null when it has none),
// and the set of ref names, so that no ref a writer creates, moves or drops
// meanwhile is lost with the snapshots removed.
func expiryRequirements(md table.Metadata) table.Requirements {
	refs := maps.Collect(md.Refs())
	reqs := table.Requirements{table.AssertTableUUID(md.TableUUID())}
	if _, ok := refs[table.MainBranch]; !ok {
		reqs = append(reqs, table.AssertRefSnapshotID(table.MainBranch, nil))
	}
	names := slices.Sorted(maps.Keys(refs))
	for _, name := range names {
		id := refs[name].SnapshotID
		reqs = append(reqs, table.AssertRefSnapshotID(name, &id))
	}
	return append(reqs, assertRefNames{names: names})
}

// assertRefNames is an in-process requirement (it never crosses the wire):
// the table's branches and tags are exactly names. The REST requirements
// can assert a known ref's snapshot, but not that no new ref appeared.
type assertRefNames struct{ names []string }

// GetType implements table.Requirement.
func (assertRefNames) GetType() string { return "floe-assert-ref-names" }

// Validate implements table.Requirement.
func (a assertRefNames) Validate(md table.Metadata) error {
	if md == nil {
		return fmt.Errorf("requirement failed: the table does not exist")
	}
	have := slices.Sorted(maps.Keys(maps.Collect(md.Refs())))
	if !slices.Equal(have, a.names) {
		return fmt.Errorf("requirement failed: branches and tags changed concurrently: expected [%s], found [%s]",
			strings.Join(a.names, ", "), strings.Join(have, ", "))
	}
	return nil
}
