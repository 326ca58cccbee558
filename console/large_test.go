package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/internal/testkit/largetable"
)

// largeTable makes table big.events with snapshots snapshots (one commit)
// whose current one holds files data files in manifests of 1,000, written
// straight into the embedded store.
func largeTable(t *testing.T, f *testkit.Floe, snapshots, files int) {
	t.Helper()
	ctx := context.Background()
	tb := f.CreateTable(t, "big", "events")
	loc := strings.TrimSuffix(tb.Metadata.Location, "/")
	fio := f.App.Objects().FileIO()
	last := int64(snapshots)
	write := func(path string, b []byte) error { return fio.WriteFile(ctx, path, b) }
	mfs, err := largetable.Manifests(loc, last, files, write)
	if err != nil {
		t.Fatal(err)
	}
	list := loc + "/metadata/snap-large.avro"
	parent := last - 1
	b, err := largetable.ManifestList(last, &parent, last, mfs)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(list, b); err != nil {
		t.Fatal(err)
	}
	empty := f.EmptyManifestList(t, loc)
	// a snapshot may not predate the table
	updates := largetable.Updates(last, time.Now().UnixMilli(), empty, list)
	if r := f.Do(t, "POST", f.P("/namespaces/big/tables/events"), map[string]any{"requirements": []any{}, "updates": updates}); r.Status != 200 {
		t.Fatalf("commit %d snapshots: %d %s", snapshots, r.Status, r.Body)
	}
}

// timedGet fetches u with a plain client (no spec validation) and times
// the whole answer.
func timedGet(t *testing.T, u, tok string) (time.Duration, int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Iceberg-Access-Delegation", "remote-signing")
	s := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return time.Since(s), resp.StatusCode, b
}

// TestLargeTablePage measures the server side of the console's table page
// (the table's metadata and its summary: snapshots, file-size histogram)
// for a table with 5,000 snapshots and 100,000 data files (it writes 100
// manifests first: about 5 s, 30 s under the race detector, where the p50
// measured about 50 ms). -short skips it unless FLOE_CONSOLE_LARGE is set.
func TestLargeTablePage(t *testing.T) {
	if testing.Short() && os.Getenv("FLOE_CONSOLE_LARGE") == "" {
		t.Skip("-short: set FLOE_CONSOLE_LARGE=1 to build a table of 5,000 snapshots and 100,000 files and time its page")
	}
	f := testkit.Start(t)
	t0 := time.Now()
	largeTable(t, f, 5000, 100000)
	t.Logf("built the table in %s", time.Since(t0).Round(time.Millisecond))
	tok := f.Token(t)
	var load, summary, timeline []time.Duration
	for i := range 21 {
		d, st, _ := timedGet(t, f.URL+f.P("/namespaces/big/tables/events?snapshots=refs"), tok)
		load = append(load, d)
		if st != 200 {
			t.Fatalf("load: %d", st)
		}
		d, st, tlBody := timedGet(t, f.URL+"/api/v1/tables/"+f.Warehouse+"/big/events/timeline", tok)
		timeline = append(timeline, d)
		if st != 200 {
			t.Fatalf("timeline: %d %s", st, tlBody)
		}
		d, st, body := timedGet(t, f.URL+"/api/v1/tables/"+f.Warehouse+"/big/events/summary", tok)
		summary = append(summary, d)
		if st != 200 {
			t.Fatalf("summary: %d %s", st, body)
		}
		if i == 0 {
			var info struct {
				SnapshotCount int   `json:"snapshot_count"`
				DataFiles     int64 `json:"data_files"`
				Histogram     []struct {
					Files int64 `json:"files"`
				} `json:"size_histogram"`
			}
			if err := json.Unmarshal(body, &info); err != nil || info.SnapshotCount != 5000 || info.DataFiles != 100000 {
				t.Fatalf("summary %d snapshots, %d files (%v), want 5000 and 100000", info.SnapshotCount, info.DataFiles, err)
			}
			var tl struct {
				SnapshotCount int `json:"snapshot_count"`
				Points        []struct {
					Snapshots    int   `json:"snapshots"`
					AddedRecords int64 `json:"added_records"`
				} `json:"points"`
			}
			if err := json.Unmarshal(tlBody, &tl); err != nil || tl.SnapshotCount != 5000 || len(tl.Points) != 500 || tl.Points[0].Snapshots != 10 {
				t.Fatalf("timeline: %d snapshots in %d points (%v), want 5000 in 500 of 10", tl.SnapshotCount, len(tl.Points), err)
			}
			var sum, want int64
			for _, p := range tl.Points {
				sum += p.AddedRecords
			}
			for i := int64(1); i <= 5000; i++ {
				want += 1000 + i%50
			}
			if sum != want {
				t.Fatalf("timeline sums %d added records, the snapshots %d", sum, want)
			}
			t.Logf("first summary (cold) %s, metadata %s (summary %d bytes)", summary[0].Round(time.Millisecond), load[0].Round(time.Millisecond), len(body))
		}
	}
	slices.Sort(load)
	slices.Sort(summary)
	slices.Sort(timeline)
	t.Logf("table page server calls over 21 runs: metadata (snapshots=refs) p50 %s max %s; timeline p50 %s max %s; summary p50 %s max %s",
		load[10].Round(time.Microsecond), load[20].Round(time.Microsecond), timeline[10].Round(time.Microsecond), timeline[20].Round(time.Microsecond),
		summary[10].Round(time.Microsecond), summary[20].Round(time.Microsecond))
	// The page makes the three calls at once; their sum bounds the wait.
	if p50 := load[10] + timeline[10] + summary[10]; p50 > 200*time.Millisecond {
		t.Errorf("table page server p50 %s (metadata + timeline + summary), want ≤ 200 ms", p50)
	}
}
