package restcat_test

import (
	"fmt"
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

// TestConcurrentCommitsOneTable: 16 writers commit to one table. Every
// commit is applied exactly once or rejected with 409, and the snapshot log
// holds exactly the applied ones.
func TestConcurrentCommitsOneTable(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["cc"]}`), 200)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/cc/tables"), createTableBody("hot", "")), 200)
	tok, n := f.Token(t), commitsPerWriter()
	f.SkipValidation()
	results := make([]testkit.WriterResult, 16)
	var wg sync.WaitGroup
	for w := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = f.RunWriter(t, tok, "/namespaces/cc/tables/hot", w+1, n)
		}()
	}
	wg.Wait()
	applied := map[int64]bool{}
	attempts := 0
	for _, r := range results {
		attempts += len(r.Applied) + r.Rejected
		for _, id := range r.Applied {
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
	f.SkipValidation()
	results := make([]testkit.WriterResult, 16)
	var wg sync.WaitGroup
	for w := range results {
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces/cm/tables"), createTableBody(fmt.Sprintf("t%d", w), "")), 200)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = f.RunWriter(t, tok, fmt.Sprintf("/namespaces/cm/tables/t%d", w), w+1, n)
		}()
	}
	wg.Wait()
	for w, r := range results {
		if len(r.Applied) != n || r.Rejected != 0 {
			t.Errorf("writer %d: %d applied, %d rejected; want %d, 0", w, len(r.Applied), r.Rejected, n)
		}
		m := loadMeta(t, f, fmt.Sprintf("/namespaces/cm/tables/t%d", w))
		if len(m.SnapshotLog) != n {
			t.Errorf("table t%d: snapshot log %d, want %d", w, len(m.SnapshotLog), n)
		}
	}
}
