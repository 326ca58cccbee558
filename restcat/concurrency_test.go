package restcat_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/floe-lake/floe/internal/testkit"
)

// commitsPerWriter is 200 as the foundation issue asks; FLOE_TEST_COMMITS
// lowers it for quick local runs.
func commitsPerWriter() int {
	if n, err := strconv.Atoi(os.Getenv("FLOE_TEST_COMMITS")); err == nil && n > 0 {
		return n
	}
	return 200
}

// skipValidation turns off spec validation for a load test: validating
// thousands of ever-larger commit responses would dominate its run time, and
// the same responses are validated by the functional tests.
func skipValidation(f *testkit.Floe) {
	f.Transport.Skip = func(*http.Request) bool { return true }
}

type writerResult struct {
	applied  []int64
	rejected int
}

// runWriter makes n commit attempts on one table. Each attempt adds a
// snapshot on top of the writer's view of main and asserts main is still
// there; a 409 means another writer won, so the writer refreshes its view.
func runWriter(t *testing.T, f *testkit.Floe, tok, path string, writer, n int) writerResult {
	var res writerResult
	cur, seqNo := refsState(t, f, tok, path)
	for i := 0; i < n; i++ {
		id := int64(writer)*1_000_000 + int64(i) + 1
		var parent *int64
		req := `{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}`
		if cur != 0 {
			parent = &cur
			req = fmt.Sprintf(`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":%d}`, cur)
		}
		body := fmt.Sprintf(`{"requirements":[%s],"updates":[{"action":"add-snapshot","snapshot":%s},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}]}`,
			req, snapshotJSON(id, parent, seqNo+1), id)
		r := f.DoAs(t, tok, "POST", f.P(path), body)
		switch r.Status {
		case 200:
			res.applied = append(res.applied, id)
			cur, seqNo = id, seqNo+1
		case 409:
			res.rejected++
			cur, seqNo = refsState(t, f, tok, path)
		default:
			t.Errorf("writer %d commit %d: status %d: %s", writer, i, r.Status, r.Body)
			return res
		}
	}
	return res
}

// refsState loads only the referenced snapshots (cheap) and returns main's
// snapshot id and the table's last sequence number.
func refsState(t *testing.T, f *testkit.Floe, tok, path string) (int64, int64) {
	r := f.DoAs(t, tok, "GET", f.P(path+"?snapshots=refs"), nil)
	if r.Status != 200 {
		t.Errorf("load %s: %d", path, r.Status)
		return 0, 0
	}
	var out struct {
		Metadata struct {
			Current *int64 `json:"current-snapshot-id"`
			LastSeq int64  `json:"last-sequence-number"`
		} `json:"metadata"`
	}
	r.JSON(t, &out)
	if out.Metadata.Current == nil || *out.Metadata.Current < 0 {
		return 0, out.Metadata.LastSeq
	}
	return *out.Metadata.Current, out.Metadata.LastSeq
}

// TestConcurrentCommitsOneTable: 16 writers commit to one table. Every
// commit is applied exactly once or rejected with 409, and the snapshot log
// holds exactly the applied ones.
func TestConcurrentCommitsOneTable(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["cc"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/cc/tables"), createTableBody("hot", "")), 200)
	tok, n := f.Token(t), commitsPerWriter()
	skipValidation(f)
	results := make([]writerResult, 16)
	var wg sync.WaitGroup
	for w := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = runWriter(t, f, tok, "/namespaces/cc/tables/hot", w+1, n)
		}()
	}
	wg.Wait()
	applied := map[int64]bool{}
	attempts := 0
	for _, r := range results {
		attempts += len(r.applied) + r.rejected
		for _, id := range r.applied {
			if applied[id] {
				t.Fatalf("snapshot %d applied twice", id)
			}
			applied[id] = true
		}
	}
	if attempts != 16*n {
		t.Fatalf("%d attempts accounted for, want %d", attempts, 16*n)
	}
	m := loadMeta(t, f, "/namespaces/cc/tables/hot")
	if len(m.SnapshotLog) != len(applied) || len(m.Snapshots) != len(applied) {
		t.Fatalf("snapshot log %d, snapshots %d, applied %d", len(m.SnapshotLog), len(m.Snapshots), len(applied))
	}
	for _, e := range m.SnapshotLog {
		if !applied[e.ID] {
			t.Fatalf("snapshot log has %d, which no writer saw applied", e.ID)
		}
	}
	if m.LastSeq != int64(len(applied)) {
		t.Errorf("last-sequence-number %d, want %d", m.LastSeq, len(applied))
	}
	t.Logf("%d writers x %d attempts: %d applied, %d rejected with 409", 16, n, len(applied), 16*n-len(applied))
}

// TestConcurrentCommitsManyTables: 16 writers, each on its own table, never conflict.
func TestConcurrentCommitsManyTables(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["cm"]}`), 200)
	tok, n := f.Token(t), commitsPerWriter()
	skipValidation(f)
	results := make([]writerResult, 16)
	var wg sync.WaitGroup
	for w := range results {
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces/cm/tables"), createTableBody(fmt.Sprintf("t%d", w), "")), 200)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = runWriter(t, f, tok, fmt.Sprintf("/namespaces/cm/tables/t%d", w), w+1, n)
		}()
	}
	wg.Wait()
	for w, r := range results {
		if len(r.applied) != n || r.rejected != 0 {
			t.Errorf("writer %d: %d applied, %d rejected; want %d, 0", w, len(r.applied), r.rejected, n)
		}
		m := loadMeta(t, f, fmt.Sprintf("/namespaces/cm/tables/t%d", w))
		if len(m.SnapshotLog) != n {
			t.Errorf("table t%d: snapshot log %d, want %d", w, len(m.SnapshotLog), n)
		}
	}
}
