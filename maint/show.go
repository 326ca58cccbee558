package maint

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
)

// TableInfo describes a table for floe table show: its snapshots, its
// files per partition, a file-size histogram, its maintenance policy and
// what maintenance last did.
type TableInfo struct {
	Warehouse        string `json:"warehouse"`
	Table            string `json:"table"`
	Location         string `json:"location"`
	MetadataLocation string `json:"metadata_location"`
	FormatVersion    int    `json:"format_version"`
	// CurrentSnapshotID is 0 when the table has no snapshot.
	CurrentSnapshotID int64 `json:"current_snapshot_id"`
	// SnapshotCount counts every snapshot; Snapshots lists the newest
	// maxShownSnapshots of them, newest first.
	SnapshotCount int            `json:"snapshot_count"`
	Snapshots     []SnapshotInfo `json:"snapshots"`
	// DataManifests counts the current snapshot's data manifests.
	DataManifests int             `json:"data_manifests"`
	DataFiles     int64           `json:"data_files"`
	DeleteFiles   int64           `json:"delete_files"`
	Records       int64           `json:"records"`
	Bytes         int64           `json:"bytes"`
	Partitions    []PartitionInfo `json:"partitions"`
	// SizeHistogram counts the current data files by size.
	SizeHistogram []SizeBucket `json:"size_histogram"`
	Policy        PolicyInfo   `json:"policy"`
	// Runs are the latest maintenance runs on the table, newest first.
	Runs []RunInfo `json:"maintenance_runs"`
	// NextRuns say when the background scheduler next runs each job the
	// table's policy enables, soonest first (empty when no scheduler runs).
	NextRuns []NextRun `json:"next_runs"`
}

// SnapshotInfo is one snapshot.
type SnapshotInfo struct {
	ID        int64     `json:"id"`
	ParentID  int64     `json:"parent_id,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	Operation string    `json:"operation"`
	// Refs are the branches and tags pointing at the snapshot.
	Refs    []string          `json:"refs,omitempty"`
	Summary map[string]string `json:"summary,omitempty"`
}

// PartitionInfo is what the current snapshot holds in one partition.
type PartitionInfo struct {
	SpecID      int    `json:"spec_id"`
	Partition   string `json:"partition"`
	DataFiles   int64  `json:"data_files"`
	DeleteFiles int64  `json:"delete_files"`
	Records     int64  `json:"records"`
	Bytes       int64  `json:"bytes"`
}

// SizeBucket counts data files of size in [Min, Max) (Max 0: no bound).
type SizeBucket struct {
	Min   int64 `json:"min_bytes"`
	Max   int64 `json:"max_bytes"`
	Files int64 `json:"files"`
}

// PolicyInfo is the resolved maintenance policy of a table.
type PolicyInfo struct {
	CompactionEnabled  bool   `json:"compaction_enabled"`
	TargetFileSize     int64  `json:"target_file_size_bytes"`
	MinInputFiles      int    `json:"min_input_files"`
	ExpireEnabled      bool   `json:"snapshot_expiry_enabled"`
	MaxSnapshotAge     string `json:"max_snapshot_age"`
	MinSnapshotsToKeep int    `json:"min_snapshots_to_keep"`
	OrphanEnabled      bool   `json:"orphan_removal_enabled"`
	OrphanMinAge       string `json:"orphan_min_age"`
	ManifestsEnabled   bool   `json:"manifest_rewrite_enabled"`
	MinManifests       int    `json:"manifests_min_count"`
}

// RunInfo is one recorded maintenance run.
type RunInfo struct {
	Job      string    `json:"job"`
	Outcome  string    `json:"outcome"`
	Node     string    `json:"node"`
	OnDemand bool      `json:"on_demand"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Detail   string    `json:"detail"`
}

// maxShownSnapshots and maxShownRuns bound TableInfo's lists.
const (
	maxShownSnapshots = 50
	maxShownRuns      = 20
)

// sizeBounds are the histogram's bucket edges.
var sizeBounds = []int64{1 << 20, 8 << 20, 32 << 20, 128 << 20, 512 << 20}

// Show describes table id of warehouse wh.
func (m *Maintainer) Show(ctx context.Context, wh string, id catalog.Ident) (TableInfo, error) {
	tbl, p, err := m.Env.open(ctx, wh, id)
	if err != nil {
		return TableInfo{}, err
	}
	md := tbl.Metadata()
	info := TableInfo{Warehouse: wh, Table: id.String(), Location: tbl.Location(), MetadataLocation: tbl.MetadataLocation(),
		FormatVersion: md.Version(), SnapshotCount: len(md.Snapshots()), Policy: policyInfo(p)}
	refs := map[int64][]string{}
	for name, r := range md.Refs() {
		refs[r.SnapshotID] = append(refs[r.SnapshotID], name)
	}
	snaps := slices.Clone(md.Snapshots())
	slices.SortFunc(snaps, func(a, b table.Snapshot) int { return int(b.TimestampMs - a.TimestampMs) })
	for _, s := range snaps[:min(len(snaps), maxShownSnapshots)] {
		si := SnapshotInfo{ID: s.SnapshotID, Timestamp: time.UnixMilli(s.TimestampMs).UTC(), Refs: refs[s.SnapshotID]}
		sort.Strings(si.Refs)
		if s.ParentSnapshotID != nil {
			si.ParentID = *s.ParentSnapshotID
		}
		if s.Summary != nil {
			si.Operation = string(s.Summary.Operation)
			si.Summary = maps.Clone(s.Summary.Properties)
		}
		info.Snapshots = append(info.Snapshots, si)
	}
	for i, lo := range append([]int64{0}, sizeBounds...) {
		b := SizeBucket{Min: lo}
		if i < len(sizeBounds) {
			b.Max = sizeBounds[i]
		}
		info.SizeHistogram = append(info.SizeHistogram, b)
	}
	if cur := tbl.CurrentSnapshot(); cur != nil {
		info.CurrentSnapshotID = cur.SnapshotID
		key := statsKey{table: md.TableUUID().String(), snapshot: cur.SnapshotID}
		fs, ok := m.Stats.get(key)
		if !ok {
			fs = fileStatsOf{SizeHistogram: info.SizeHistogram}
			if err := m.fileStats(ctx, tbl, cur, &fs); err != nil {
				return TableInfo{}, err
			}
			m.Stats.put(key, fs)
		}
		info.DataManifests, info.DataFiles, info.DeleteFiles, info.Records, info.Bytes = fs.DataManifests, fs.DataFiles, fs.DeleteFiles, fs.Records, fs.Bytes
		info.Partitions, info.SizeHistogram = fs.Partitions, fs.SizeHistogram
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	info.NextRuns = NextRuns(p, wh, id, m.Scheduled, m.Env.Interval, m.Lifecycle != nil && m.Lifecycle.Cold != nil, now())
	if info.NextRuns == nil {
		info.NextRuns = []NextRun{}
	}
	if m.Store != nil {
		runs, err := m.Store.MaintenanceRuns(ctx, RunFilter{Warehouse: wh, Table: &id, Limit: maxShownRuns})
		if err != nil {
			return TableInfo{}, fmt.Errorf("maintenance runs: %w", err)
		}
		for _, r := range runs {
			info.Runs = append(info.Runs, RunInfo{Job: r.Job, Outcome: string(r.Outcome), Node: r.Node, OnDemand: r.Tick < 0,
				Started: r.Started, Finished: r.Finished, Detail: r.Detail})
		}
	}
	return info, nil
}

// fileStats fills in the file counts of the current snapshot.
func (m *Maintainer) fileStats(ctx context.Context, tbl *table.Table, cur *table.Snapshot, info *fileStatsOf) error {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	ms, err := cur.Manifests(fsys)
	if err != nil {
		return fmt.Errorf("read manifest list: %w", err)
	}
	md := tbl.Metadata()
	parts := map[string]*PartitionInfo{}
	for _, mf := range ms {
		if err := ctx.Err(); err != nil {
			return err
		}
		if mf.ManifestContent() == iceberg.ManifestContentData {
			info.DataManifests++
		}
		for e, err := range mf.Entries(fsys, true) {
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			df := e.DataFile()
			key := partitionString(md, df)
			pi := parts[key]
			if pi == nil {
				pi = &PartitionInfo{SpecID: int(df.SpecID()), Partition: key}
				parts[key] = pi
			}
			if df.ContentType() != iceberg.EntryContentData {
				pi.DeleteFiles++
				info.DeleteFiles++
				continue
			}
			pi.DataFiles++
			pi.Records += df.Count()
			pi.Bytes += df.FileSizeBytes()
			info.DataFiles++
			info.Records += df.Count()
			info.Bytes += df.FileSizeBytes()
			i, _ := slices.BinarySearch(sizeBounds, df.FileSizeBytes()+1)
			info.SizeHistogram[i].Files++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		info.Partitions = append(info.Partitions, *parts[k])
	}
	return nil
}

// partitionString renders a file's partition as "spec <id>: name=value, ...".
func partitionString(md table.Metadata, df iceberg.DataFile) string {
	spec := md.PartitionSpecByID(int(df.SpecID()))
	vals := df.Partition()
	if spec == nil || spec.NumFields() == 0 {
		return "(unpartitioned)"
	}
	var parts []string
	sc := md.CurrentSchema()
	for _, f := range spec.Fields() {
		v, ok := vals[f.FieldID]
		s := "null"
		if ok && v != nil {
			s = fmt.Sprint(v)
			if src, found := sc.FindFieldByID(f.SourceID()); found {
				s = f.Transform.ToHumanStrType(f.Transform.ResultType(src.Type), v)
			}
		}
		parts = append(parts, f.Name+"="+s)
	}
	return fmt.Sprintf("spec %d: %s", df.SpecID(), strings.Join(parts, ", "))
}

func policyInfo(p Policy) PolicyInfo {
	pi := PolicyInfo{CompactionEnabled: p.CompactionEnabled, TargetFileSize: p.TargetFileSize, MinInputFiles: p.MinInputFiles,
		ExpireEnabled: p.ExpireEnabled, MaxSnapshotAge: p.Retention.MaxAge.String(), MinSnapshotsToKeep: p.Retention.MinKeep,
		OrphanEnabled: p.OrphanEnabled, OrphanMinAge: p.OrphanMinAge.String(),
		ManifestsEnabled: p.ManifestsEnabled, MinManifests: p.MinManifests}
	return pi
}
