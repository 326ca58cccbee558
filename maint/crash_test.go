package maint_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/maint"
)

// The crash test runs ingest and compaction in a child process (this test
// binary, told by crashHelperEnv to act as the helper) and kills it with
// SIGKILL at random moments.

const (
	crashHelperEnv = "FLOE_MAINT_CRASH_HELPER_DIR"
	crashBatch     = 7 // rows per append
)

var crashTable = catalog.Ident{Namespace: catalog.Namespace{"crash"}, Name: "events"}

// TestMain runs the crash helper instead of the tests when asked to.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		if err := crashHelper(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashConfig is the configuration of the parent and the helper: the same
// data directory, no listeners, no background work.
func crashConfig(dir string) app.Config {
	cfg := app.Defaults()
	cfg.DataDir = dir
	cfg.Maintenance = false
	cfg.AuditExportInterval = 0
	cfg.S3Listen = "off"
	cfg.BootstrapCredential = "crash:crash-secret"
	return cfg
}

type crashNode struct {
	a   *app.App
	lk  *lake.Lake
	env *maint.Env
}

func openCrashNode(ctx context.Context, dir string) (*crashNode, error) {
	a, err := app.Open(ctx, crashConfig(dir), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	lk := lake.New(a.Catalog(), lake.NewBucketFS(a.Objects()), lake.Options{})
	env := &maint.Env{Tables: a.Catalog(), Lake: lk,
		Policies: maint.Resolver{Namespaces: a.Catalog(), Base: maint.DefaultPolicy(maint.Retention{})}}
	return &crashNode{a: a, lk: lk, env: env}, nil
}

// crashHelper appends batches of crashBatch rows whose ids continue the
// table's, and compacts the table every third batch, until it is killed.
func crashHelper(dir string) error {
	ctx := context.Background()
	n, err := openCrashNode(ctx, dir)
	if err != nil {
		return err
	}
	compact := maint.NewCompact(n.env)
	fmt.Println("ready")
	for i := 0; ; i++ {
		tbl, err := n.lk.LoadTable(ctx, "floe", crashTable)
		if err != nil {
			return err
		}
		count := int64(0)
		if s := tbl.CurrentSnapshot(); s != nil && s.Summary != nil {
			count, _ = strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
		}
		data := rows(&fakeTB{}, tbl, count, count+crashBatch)
		_, err = lake.AppendTable(ctx, tbl, data, nil)
		data.Release()
		if err != nil {
			return err
		}
		fmt.Println("appended")
		if i%3 == 2 {
			if _, err := compact.CompactTable(ctx, "floe", crashTable, false); err != nil {
				return err
			}
			fmt.Println("compacted")
		}
	}
}

// fakeTB lets the helper use the row builders outside a test.
type fakeTB struct{ testing.TB }

func (fakeTB) Helper()                   {}
func (fakeTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (fakeTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// TestCrashDuringIngestAndCompaction: 50 times, the helper appends and
// compacts and is killed at a random moment. After every kill the table
// reads, and holds exactly the ids 0..n-1 for a whole number of batches n
// (a committed state: no batch is half there, none is lost or doubled).
// Orphan removal then removes what the killed writers left behind.
func TestCrashDuringIngestAndCompaction(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	n, err := openCrashNode(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.a.Catalog().CreateNamespace(ctx, "floe", crashTable.Namespace, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := n.a.Catalog().CreateTable(ctx, "floe", crashTable.Namespace, catalog.CreateTableRequest{
		Name: crashTable.Name, Schema: eventSchema(),
		Properties: map[string]string{maint.PropMinInputFiles: "2", maint.PropOrphanMinAge: "1h"}}); err != nil {
		t.Fatal(err)
	}
	if err := n.a.Close(ctx); err != nil {
		t.Fatal(err)
	}

	const iterations = 50
	start := time.Now()
	var last int
	for i := range iterations {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill at a random moment after a random number (0-3) of the
		// helper's steps, whatever its speed (the race detector and a
		// loaded machine slow it down many times).
		killAfterSteps(t, out, rand.IntN(4), time.Duration(rand.IntN(60))*time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("iteration %d: the helper ended before it was killed: %v", i, err)
		}
		got := crashCheck(t, dir, i)
		if got < last {
			t.Fatalf("iteration %d: %d rows, fewer than the %d committed before", i, got, last)
		}
		last = got
	}
	t.Logf("%d kills in %s; %d rows committed", iterations, time.Since(start).Round(time.Millisecond), last)
	if last == 0 {
		t.Fatal("no batch was ever committed: the helper never got far enough")
	}

	// Orphans: what killed writers left is removed once old enough, and the
	// table still reads the same.
	n, err = openCrashNode(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer n.a.Close(context.Background())
	tbl, err := n.lk.LoadTable(ctx, "floe", crashTable)
	if err != nil {
		t.Fatal(err)
	}
	before := readContent(t, tbl)
	whDir := n.a.Config().WarehouseDir
	age(t, filepath.Join(whDir, filepath.FromSlash(strings.TrimPrefix(tbl.Location(), "s3://floe/"))), 2*time.Hour)
	orphans := maint.NewOrphans(n.env, n.a.Objects())
	rep, err := orphans.RemoveOrphans(ctx, "floe", crashTable, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("orphan removal: %s", rep.Summary)
	again, err := orphans.RemoveOrphans(ctx, "floe", crashTable, true)
	if err != nil || again.Stats["orphan_files"] != 0 {
		t.Fatalf("orphans left after removal: %+v, %v", again, err)
	}
	if c := readContent(t, n.load(t)); c.hash != before.hash {
		t.Fatal("orphan removal changed the table's content")
	}
}

// killAfterSteps reads the helper's output until it is ready and has
// reported steps more appends or compactions, then waits for jitter.
func killAfterSteps(t *testing.T, out io.Reader, steps int, jitter time.Duration) {
	t.Helper()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	ready := false
	deadline := time.After(2 * time.Minute)
	for !ready || steps > 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the crash helper ended early")
			}
			if l == "ready" {
				ready = true
			} else if ready {
				steps--
			}
		case <-deadline:
			t.Fatal("the crash helper made no progress for 2 minutes")
		}
	}
	time.Sleep(jitter)
	go func() {
		for range lines { // drain until the helper dies
		}
	}()
}

func (n *crashNode) load(t *testing.T) *table.Table {
	t.Helper()
	tbl, err := n.lk.LoadTable(t.Context(), "floe", crashTable)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// crashCheck opens the data directory after a kill and checks the table;
// it returns the number of rows.
func crashCheck(t *testing.T, dir string, i int) int {
	t.Helper()
	ctx := t.Context()
	n, err := openCrashNode(ctx, dir)
	if err != nil {
		t.Fatalf("iteration %d: reopen: %v", i, err)
	}
	defer n.a.Close(context.Background())
	tbl, err := n.lk.LoadTable(ctx, "floe", crashTable)
	if err != nil {
		t.Fatalf("iteration %d: load: %v", i, err)
	}
	c := readContent(t, tbl)
	if len(c.ids)%crashBatch != 0 || !slices.Equal(c.ids, seq(0, int64(len(c.ids)))) {
		t.Fatalf("iteration %d: %d rows, not a committed state (ids %v...)", i, len(c.ids), c.ids[:min(len(c.ids), 20)])
	}
	return len(c.ids)
}
