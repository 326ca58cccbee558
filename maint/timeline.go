package maint

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
)

// MaxTimelinePoints bounds the points of a Timeline.
const MaxTimelinePoints = 500

// Timeline is the history of a table's snapshots, from the snapshot
// summaries of its metadata (no manifest is read), oldest first.
type Timeline struct {
	Table         string          `json:"table"`
	SnapshotCount int             `json:"snapshot_count"`
	Points        []TimelinePoint `json:"points"`
}

// TimelinePoint is one snapshot or, when a table has more snapshots than
// MaxTimelinePoints, consecutive snapshots summed: Time is the first one's,
// SnapshotID the last one's, Operation their common operation or "mixed".
type TimelinePoint struct {
	Time           time.Time `json:"time"`
	SnapshotID     int64     `json:"snapshot_id"`
	Snapshots      int       `json:"snapshots"`
	Operation      string    `json:"operation"`
	AddedRecords   int64     `json:"added_records"`
	DeletedRecords int64     `json:"deleted_records"`
	AddedFiles     int64     `json:"added_files"`
	DeletedFiles   int64     `json:"deleted_files"`
}

// Timeline describes the snapshot history of table id of warehouse wh in
// at most MaxTimelinePoints points.
func (m *Maintainer) Timeline(ctx context.Context, wh string, id catalog.Ident) (Timeline, error) {
	tbl, err := m.Env.Lake.LoadTable(ctx, wh, id)
	if err != nil {
		return Timeline{}, err
	}
	snaps := slices.Clone(tbl.Metadata().Snapshots())
	slices.SortStableFunc(snaps, func(a, b table.Snapshot) int {
		switch {
		case a.TimestampMs < b.TimestampMs:
			return -1
		case a.TimestampMs > b.TimestampMs:
			return 1
		}
		return 0
	})
	out := Timeline{Table: id.String(), SnapshotCount: len(snaps), Points: []TimelinePoint{}}
	per := (len(snaps) + MaxTimelinePoints - 1) / MaxTimelinePoints
	for i := 0; i < len(snaps); i += max(per, 1) {
		var p TimelinePoint
		for j, s := range snaps[i:min(len(snaps), i+max(per, 1))] {
			op, n := snapshotCounts(s)
			if j == 0 {
				p.Time, p.Operation = time.UnixMilli(s.TimestampMs).UTC(), op
			} else if p.Operation != op {
				p.Operation = "mixed"
			}
			p.SnapshotID = s.SnapshotID
			p.Snapshots++
			p.AddedRecords += n[0]
			p.DeletedRecords += n[1]
			p.AddedFiles += n[2]
			p.DeletedFiles += n[3]
		}
		out.Points = append(out.Points, p)
	}
	return out, nil
}

// snapshotCounts reads a snapshot's operation and its added and deleted
// records and data files from its summary (missing counts are 0).
func snapshotCounts(s table.Snapshot) (string, [4]int64) {
	var n [4]int64
	if s.Summary == nil {
		return "", n
	}
	for i, k := range []string{"added-records", "deleted-records", "added-data-files", "deleted-data-files"} {
		if v, err := strconv.ParseInt(s.Summary.Properties[k], 10, 64); err == nil && v > 0 {
			n[i] = v
		}
	}
	return string(s.Summary.Operation), n
}
