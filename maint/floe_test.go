package maint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/maint"
)

const day = 24 * time.Hour

const tableSchema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}`

// refSpec is a branch or tag to create on a history table.
type refSpec struct {
	typ string // branch or tag
	id  int64
}

// history describes a table to build: snapshots 1..len(ages) in a chain
// (each the parent of the next), aged as given (oldest first), main at the
// last one, plus refs.
type history struct {
	props map[string]string
	ages  []time.Duration
	refs  map[string]refSpec
}

// snapshotJSON renders a snapshot with a given age (testkit.SnapshotJSON's
// shape with an explicit timestamp) and an empty manifest list (list, or
// testkit.EmptyList for CreateWithUpdates to write).
func snapshotJSON(list string, id, parent int64, age time.Duration) string {
	return testkit.SnapshotAt(list, id, parent, time.Now().Add(-age))
}

// createHistory creates ns.name with the snapshots of h in one create
// transaction (stage-create, then a commit asserting create). The metadata
// builder refuses a snapshot more than a minute older than the table's
// last update, so old history can only be written into a new table, oldest
// snapshot first.
func createHistory(t *testing.T, f *testkit.Floe, ns, name string, h history) catalog.Ident {
	t.Helper()
	var updates []string
	if len(h.props) > 0 {
		b, _ := json.Marshal(h.props)
		updates = append(updates, `{"action":"set-properties","updates":`+string(b)+`}`)
	}
	for i, age := range h.ages {
		updates = append(updates, `{"action":"add-snapshot","snapshot":`+snapshotJSON(testkit.EmptyList, int64(i+1), int64(i), age)+`}`)
	}
	// Other refs before main: a ref to a snapshot added in the same commit
	// sets last-updated-ms to that snapshot's time, which must end at least
	// as late as main's entry in the snapshot log.
	for _, name := range slices.Sorted(maps.Keys(h.refs)) {
		ref := h.refs[name]
		updates = append(updates, fmt.Sprintf(`{"action":"set-snapshot-ref","ref-name":%q,"type":%q,"snapshot-id":%d}`, name, ref.typ, ref.id))
	}
	if n := len(h.ages); n > 0 {
		updates = append(updates, fmt.Sprintf(`{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}`, n))
	}
	f.CreateWithUpdates(t, ns, name, tableSchema, updates...)
	return catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name}
}

// tableView is what the tests check of a table's metadata.
type tableView struct {
	Location  string
	Snapshots []int64
	Current   int64
	Refs      map[string]int64
}

func loadTable(t *testing.T, f *testkit.Floe, id catalog.Ident) tableView {
	t.Helper()
	r := f.Do(t, "GET", f.P("/namespaces/"+id.Namespace.String()+"/tables/"+id.Name), nil)
	if r.Status != 200 {
		t.Fatalf("load %s: %d %s", id, r.Status, r.Body)
	}
	var out struct {
		Location string `json:"metadata-location"`
		Metadata struct {
			Current   *int64 `json:"current-snapshot-id"`
			Snapshots []struct {
				ID int64 `json:"snapshot-id"`
			} `json:"snapshots"`
			Refs map[string]struct {
				ID int64 `json:"snapshot-id"`
			} `json:"refs"`
		} `json:"metadata"`
	}
	r.JSON(t, &out)
	v := tableView{Location: out.Location, Refs: map[string]int64{}}
	if out.Metadata.Current != nil {
		v.Current = *out.Metadata.Current
	}
	for _, s := range out.Metadata.Snapshots {
		v.Snapshots = append(v.Snapshots, s.ID)
	}
	slices.Sort(v.Snapshots)
	for n, ref := range out.Metadata.Refs {
		v.Refs[n] = ref.ID
	}
	return v
}

// TestExpireSnapshots_Floe runs the expiry job against tables of a real
// Floe and checks which snapshots remain.
func TestExpireSnapshots_Floe(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.Maintenance = false })
	ages := []time.Duration{10 * day, 9 * day, 8 * day, 2 * day, day} // snapshots 1..5
	tests := []struct {
		name    string
		h       history
		want    []int64
		summary string
	}{
		{"Default", history{ages: ages}, []int64{4, 5}, "expired 3 of 5 snapshots"},
		{"AllYoung", history{ages: []time.Duration{3 * day, 2 * day, day}}, []int64{1, 2, 3}, "nothing to expire (3 snapshots)"},
		{"OnlyCurrentOld", history{ages: []time.Duration{9 * day, 8 * day}}, []int64{2}, "expired 1 of 2"},
		{"NoSnapshots", history{}, nil, "nothing to expire (0 snapshots)"},
		{"MaxAgeProperty", history{ages: ages, props: map[string]string{maint.PropMaxSnapshotAge: fmt.Sprint((8*day + day/2).Milliseconds())}},
			[]int64{3, 4, 5}, "max age 204h0m0s"},
		{"MinKeepProperty", history{ages: ages, props: map[string]string{maint.PropMinSnapshotsToKeep: "4"}}, []int64{2, 3, 4, 5}, "min 4 per branch"},
		{"TagAndBranchKept", history{ages: ages, refs: map[string]refSpec{"v1": {"tag", 1}, "audit": {"branch", 2}}}, []int64{1, 2, 4, 5}, "expired 1 of 5"},
		{"GCDisabled", history{ages: ages, props: map[string]string{maint.PropGCEnabled: "false"}}, []int64{1, 2, 3, 4, 5}, "gc.enabled is false"},
	}
	job := maint.NewExpireSnapshots(f.App.Catalog(), maint.ExpireOptions{})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := createHistory(t, f, "exp", fmt.Sprintf("t%d", i), tt.h)
			before := loadTable(t, f, id)
			res, err := job.Run(t.Context(), maint.TableRef{Warehouse: f.Warehouse, Ident: id})
			must(t, err)
			if !strings.Contains(res.Summary, tt.summary) {
				t.Errorf("summary %q, want it to contain %q", res.Summary, tt.summary)
			}
			after := loadTable(t, f, id)
			if changed := len(after.Snapshots) < len(before.Snapshots); res.Changed != changed {
				t.Errorf("Result.Changed = %v, but snapshots went from %v to %v", res.Changed, before.Snapshots, after.Snapshots)
			}
			if !slices.Equal(after.Snapshots, tt.want) {
				t.Errorf("snapshots %v remain, want %v", after.Snapshots, tt.want)
			}
			if after.Current != before.Current || !maps.Equal(after.Refs, before.Refs) {
				t.Errorf("refs changed: %+v -> %+v", before, after)
			}
			// A second run finds nothing to do and commits nothing.
			res, err = job.Run(t.Context(), maint.TableRef{Warehouse: f.Warehouse, Ident: id})
			must(t, err)
			if again := loadTable(t, f, id); again.Location != after.Location {
				t.Errorf("second run committed again (%q): %s -> %s", res.Summary, after.Location, again.Location)
			}
		})
	}
	t.Run("DroppedTable", func(t *testing.T) {
		res, err := job.Run(t.Context(), maint.TableRef{Warehouse: f.Warehouse, Ident: catalog.Ident{Namespace: catalog.Namespace{"exp"}, Name: "gone"}})
		if err != nil || res.Summary != "table no longer exists" {
			t.Errorf("Run on a missing table = %+v, %v", res, err)
		}
	})
}

// racingTables lets a writer commit through Floe just before each of the
// job's first `races` commits, as a concurrent engine would.
type racingTables struct {
	maint.Tables
	races   int
	writer  func(attempt int)
	commits atomic.Int32
}

func (r *racingTables) CommitTable(ctx context.Context, wh string, tc catalog.TableCommit) (*catalog.TableState, error) {
	n := int(r.commits.Add(1))
	if n <= r.races {
		r.writer(n)
	}
	return r.Tables.CommitTable(ctx, wh, tc)
}

// TestExpireSnapshots_ConcurrentWriter: a writer's commit that lands
// between the job's load and its commit makes the job's commit fail; the
// job reloads and retries, and the writer's change survives.
func TestExpireSnapshots_ConcurrentWriter(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.Maintenance = false })
	ages := []time.Duration{10 * day, 9 * day, 8 * day, 2 * day, day}
	commit := func(t *testing.T, id catalog.Ident, updates string) {
		t.Helper()
		r := f.Do(t, "POST", f.P("/namespaces/exp/tables/"+id.Name), `{"requirements":[],"updates":[`+updates+`]}`)
		if r.Status != 200 {
			t.Fatalf("writer commit: %d %s", r.Status, r.Body)
		}
	}
	tests := []struct {
		name     string
		races    int
		writer   func(t *testing.T, id catalog.Ident, attempt int)
		wantErr  bool
		want     []int64
		wantRefs map[string]int64
	}{
		{"Append", 1, func(t *testing.T, id catalog.Ident, _ int) {
			list := f.EmptyManifestList(t, f.TableLocation(t, "/namespaces/exp/tables/"+id.Name))
			commit(t, id, `{"action":"add-snapshot","snapshot":`+snapshotJSON(list, 6, 5, 0)+`},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":6}`)
		}, false, []int64{4, 5, 6}, map[string]int64{"main": 6}},
		{"TagAnExpiringSnapshot", 1, func(t *testing.T, id catalog.Ident, _ int) {
			commit(t, id, `{"action":"set-snapshot-ref","ref-name":"keep","type":"tag","snapshot-id":2}`)
		}, false, []int64{2, 4, 5}, map[string]int64{"main": 5, "keep": 2}},
		{"BranchFromAnExpiringSnapshot", 1, func(t *testing.T, id catalog.Ident, _ int) {
			commit(t, id, `{"action":"set-snapshot-ref","ref-name":"fix","type":"branch","snapshot-id":1}`)
		}, false, []int64{1, 4, 5}, map[string]int64{"main": 5, "fix": 1}},
		{"RetriesExhausted", 10, func(t *testing.T, id catalog.Ident, attempt int) {
			commit(t, id, fmt.Sprintf(`{"action":"set-snapshot-ref","ref-name":"t%d","type":"tag","snapshot-id":5}`, attempt))
		}, true, []int64{1, 2, 3, 4, 5}, map[string]int64{"main": 5, "t1": 5, "t2": 5, "t3": 5, "t4": 5, "t5": 5}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := createHistory(t, f, "exp", fmt.Sprintf("race%d", i), history{ages: ages})
			rt := &racingTables{Tables: f.App.Catalog(), races: tt.races, writer: func(n int) { tt.writer(t, id, n) }}
			job := maint.NewExpireSnapshots(rt, maint.ExpireOptions{})
			res, err := job.Run(t.Context(), maint.TableRef{Warehouse: f.Warehouse, Ident: id})
			if tt.wantErr {
				if floe.KindOf(err) != floe.Conflict {
					t.Fatalf("Run = %+v, %v; want a Conflict once retries run out", res, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			v := loadTable(t, f, id)
			if !slices.Equal(v.Snapshots, tt.want) || !maps.Equal(v.Refs, tt.wantRefs) {
				t.Errorf("after the race: snapshots %v refs %v, want %v and %v", v.Snapshots, v.Refs, tt.want, tt.wantRefs)
			}
			if !tt.wantErr && rt.commits.Load() != 2 {
				t.Errorf("%d commit attempts, want 2", rt.commits.Load())
			}
		})
	}
}

// TestScheduler_InFloe: a Floe node with maintenance on expires old
// snapshots by itself and records its runs.
func TestScheduler_InFloe(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) {
		c.MaintenanceInterval = 100 * time.Millisecond
		c.MaintenanceLeaseTTL = 50 * time.Millisecond
	})
	id := createHistory(t, f, "auto", "events", history{ages: []time.Duration{10 * day, 9 * day, day}})
	waitFor(t, "old snapshots to expire", func() bool { return slices.Equal(loadTable(t, f, id).Snapshots, []int64{3}) })
	var runs []maint.Run
	waitFor(t, "a recorded run", func() bool {
		var err error
		runs, err = f.App.Store().MaintenanceRuns(t.Context(), maint.RunFilter{Warehouse: f.Warehouse, Table: &id, Job: maint.ExpireSnapshotsJob})
		must(t, err)
		return slices.ContainsFunc(runs, func(r maint.Run) bool { return strings.HasPrefix(r.Detail, "expired 2 of 3") })
	})
	for _, r := range runs {
		// The scheduler keeps ticking: a run listed while it works is
		// still "running"; every finished one must have succeeded.
		if r.Node != f.App.Maintenance().Node() || r.Outcome != maint.OutcomeOK && r.Outcome != maint.OutcomeRunning {
			t.Errorf("run %+v", r)
		}
	}
}
