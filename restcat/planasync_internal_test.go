package restcat

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/testkit/localcat"
)

// gatedFS holds every manifest read until the gate opens.
type gatedFS struct {
	icebergio.IO
	gate   chan struct{}
	mu     sync.Mutex
	opened int // manifests opened
}

func (g *gatedFS) Open(name string) (icebergio.File, error) {
	if strings.HasSuffix(name, ".avro") && !strings.Contains(name, "/snap-") {
		g.mu.Lock()
		g.opened++
		g.mu.Unlock()
		<-g.gate
	}
	return g.IO.Open(name)
}

func (g *gatedFS) manifestsOpened() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.opened
}

// asyncFixture is a handler over a 20-file table (two manifests) whose
// plans run in the background (threshold 5 files), on one worker, with at
// most three plans in progress and two per principal.
type asyncFixture struct {
	h    *Handler
	fs   *gatedFS
	path string
}

func newAsyncFixture(t *testing.T) *asyncFixture {
	t.Helper()
	lc := localcat.New(t)
	_, fsys := lc.RegionTable(t, "t", 2, 10)
	g := &gatedFS{IO: fsys, gate: make(chan struct{})}
	h := New(lc.Catalog, Options{DefaultWarehouse: localcat.Warehouse, Planning: &Planning{FS: g, PageSize: 4,
		Async: AsyncPlanning{ThresholdFiles: 5, Workers: 1, Queue: 3, PerPrincipal: 2}}})
	t.Cleanup(func() {
		select {
		case <-g.gate:
		default:
			close(g.gate)
		}
		h.Close()
	})
	return &asyncFixture{h: h, fs: g, path: "/v1/" + localcat.Warehouse + "/namespaces/bench/tables/t"}
}

func (f *asyncFixture) do(t *testing.T, who, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r = r.WithContext(auth.WithClaims(r.Context(), auth.Claims{PrincipalID: "id-" + who, Principal: who}))
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func (f *asyncFixture) submit(t *testing.T, who string) string {
	t.Helper()
	w := f.do(t, who, "POST", f.path+"/plan", `{}`)
	var out struct {
		Status string `json:"status"`
		PlanID string `json:"plan-id"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 || out.Status != "submitted" || out.PlanID == "" {
		t.Fatalf("plan: %d %s", w.Code, w.Body)
	}
	return out.PlanID
}

func (f *asyncFixture) status(t *testing.T, who, planID string) string {
	t.Helper()
	w := f.do(t, who, "GET", f.path+"/plan/"+planID, "")
	var out struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 {
		t.Fatalf("fetchPlanningResult: %d %s", w.Code, w.Body)
	}
	return out.Status
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAsyncPlanQueueBounds(t *testing.T) {
	f := newAsyncFixture(t)
	// Alice's two plans: one runs (held at the gate), one waits for the
	// worker. A third is beyond her bound; Bob's first fills the queue and
	// his second is beyond it.
	a1, a2 := f.submit(t, "alice"), f.submit(t, "alice")
	for _, c := range []struct {
		who, msg string
	}{
		{"alice", "too many scan plans of yours in progress (2)"},
	} {
		w := f.do(t, c.who, "POST", f.path+"/plan", `{}`)
		if w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), c.msg) ||
			!strings.Contains(w.Body.String(), "ServiceUnavailableException") {
			t.Fatalf("%s beyond her bound: %d %q %s", c.who, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	b1 := f.submit(t, "bob")
	if w := f.do(t, "bob", "POST", f.path+"/plan", `{}`); w.Code != 503 || !strings.Contains(w.Body.String(), "too many scan plans in progress on this server (3)") {
		t.Fatalf("beyond the queue: %d %s", w.Code, w.Body)
	}
	for _, id := range []string{a1, a2} {
		if s := f.status(t, "alice", id); s != "submitted" {
			t.Errorf("%s: status %s, want submitted", id, s)
		}
	}
	// Cancelling one frees its place.
	if w := f.do(t, "alice", "DELETE", f.path+"/plan/"+a2, ""); w.Code != 204 {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	if s := f.status(t, "alice", a2); s != "cancelled" {
		t.Errorf("cancelled plan: status %s", s)
	}
	waitFor(t, "the cancelled plan to leave the queue", func() bool {
		f.h.plans.async.mu.Lock()
		defer f.h.plans.async.mu.Unlock()
		return f.h.plans.async.inflight == 2
	})
	a3 := f.submit(t, "alice")
	// Open the gate: every plan left completes.
	close(f.fs.gate)
	for _, p := range []struct{ who, id string }{{"alice", a1}, {"alice", a3}, {"bob", b1}} {
		waitFor(t, "plan "+p.id, func() bool { return f.status(t, p.who, p.id) == "completed" })
	}
	if s := f.status(t, "alice", a2); s != "cancelled" {
		t.Errorf("cancelled plan became %s", s)
	}
}

func TestAsyncPlanCancelStopsTheWork(t *testing.T) {
	f := newAsyncFixture(t)
	before := runtime.NumGoroutine()
	id := f.submit(t, "alice")
	waitFor(t, "the plan to read a manifest", func() bool { return f.fs.manifestsOpened() > 0 })
	f.h.plans.async.mu.Lock()
	j := f.h.plans.async.jobs[id]
	f.h.plans.async.mu.Unlock()
	if w := f.do(t, "alice", "DELETE", f.path+"/plan/"+id, ""); w.Code != 204 {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	close(f.fs.gate) // the manifest read returns; the cancelled plan goes no further
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled plan's goroutine did not end")
	}
	if s := f.status(t, "alice", id); s != "cancelled" {
		t.Errorf("status %s, want cancelled", s)
	}
	if n, b := f.h.plans.results.Len(); n != 0 || b != 0 {
		t.Errorf("a cancelled plan left %d results (%d bytes)", n, b)
	}
	if _, ok := f.h.plans.handles.Get(id); ok {
		t.Error("a cancelled plan's handle (its plan tasks) is still live")
	}
	waitFor(t, "goroutines back to where they were", func() bool { return runtime.NumGoroutine() <= before })
	f.h.plans.async.mu.Lock()
	defer f.h.plans.async.mu.Unlock()
	if f.h.plans.async.inflight != 0 || len(f.h.plans.async.byPrincipal) != 0 {
		t.Errorf("in flight %d, by principal %v after cancel", f.h.plans.async.inflight, f.h.plans.async.byPrincipal)
	}
}

func TestAsyncPlanOwnedByItsPrincipal(t *testing.T) {
	f := newAsyncFixture(t)
	close(f.fs.gate)
	id := f.submit(t, "alice")
	waitFor(t, "completion", func() bool { return f.status(t, "alice", id) == "completed" })
	for _, m := range []string{"GET", "DELETE"} {
		w := f.do(t, "mallory", m, f.path+"/plan/"+id, "")
		if w.Code != 404 || !strings.Contains(w.Body.String(), "NoSuchPlanIdException") {
			t.Errorf("%s by another principal: %d %s", m, w.Code, w.Body)
		}
	}
	if s := f.status(t, "alice", id); s != "completed" {
		t.Errorf("after another's cancel: %s", s)
	}
}

func TestAsyncPlanExpires(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	lc := localcat.New(t)
	_, fsys := lc.RegionTable(t, "t", 1, 10)
	h := New(lc.Catalog, Options{DefaultWarehouse: localcat.Warehouse, Planning: &Planning{FS: fsys, TTL: time.Minute, Now: clock,
		Async: AsyncPlanning{ThresholdFiles: 5}}})
	t.Cleanup(h.Close)
	f := &asyncFixture{h: h, path: "/v1/" + localcat.Warehouse + "/namespaces/bench/tables/t"}
	id := f.submit(t, "alice")
	waitFor(t, "completion", func() bool { return f.status(t, "alice", id) == "completed" })
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if w := f.do(t, "alice", "GET", f.path+"/plan/"+id, ""); w.Code != 404 || !strings.Contains(w.Body.String(), "NoSuchPlanIdException") {
		t.Errorf("expired plan: %d %s", w.Code, w.Body)
	}
}

func TestPlanResultZipped(t *testing.T) {
	p := &planResult{zipped: true}
	want := []string{`"file-scan-tasks":[]`, strings.Repeat(`{"a":1},`, 1000)}
	for _, pg := range want {
		p.add([]byte(pg))
	}
	for i, w := range want {
		got, err := p.page(i)
		if err != nil || string(got) != w {
			t.Fatalf("page %d: %v %.40q", i, err, got)
		}
	}
	if len(p.pages[1]) > 200 {
		t.Errorf("a repetitive page of %d bytes deflated to %d", len(want[1]), len(p.pages[1]))
	}
	p.pages[1] = []byte("not deflate")
	if _, err := p.page(1); err == nil {
		t.Error("a corrupt page read without error")
	}
}

// failingFS fails every manifest read.
type failingFS struct{ icebergio.IO }

func (f failingFS) Open(name string) (icebergio.File, error) {
	if strings.HasSuffix(name, ".avro") && !strings.Contains(name, "/snap-") {
		return nil, errors.New("disk on fire at /secret/path")
	}
	return f.IO.Open(name)
}

func TestAsyncPlanFailed(t *testing.T) {
	lc := localcat.New(t)
	_, fsys := lc.RegionTable(t, "t", 1, 10)
	h := New(lc.Catalog, Options{DefaultWarehouse: localcat.Warehouse, Planning: &Planning{FS: failingFS{fsys},
		Async: AsyncPlanning{ThresholdFiles: 5}}})
	t.Cleanup(h.Close)
	f := &asyncFixture{h: h, path: "/v1/" + localcat.Warehouse + "/namespaces/bench/tables/t"}
	id := f.submit(t, "alice")
	var w *httptest.ResponseRecorder
	waitFor(t, "the plan to fail", func() bool {
		w = f.do(t, "alice", "GET", f.path+"/plan/"+id, "")
		return w.Code != 200
	})
	// An error response, as the spec asks of a failed plan, that says
	// nothing of the cause.
	if w.Code != 500 || !strings.Contains(w.Body.String(), `"type":"InternalServerError"`) || strings.Contains(w.Body.String(), "secret") {
		t.Errorf("failed plan: %d %s", w.Code, w.Body)
	}
	h.plans.async.mu.Lock()
	defer h.plans.async.mu.Unlock()
	if h.plans.async.inflight != 0 {
		t.Errorf("a failed plan still counts as in flight")
	}
}

// TestAsyncPlanEvictedIsPlannedAgain: a completed plan whose result left
// the plan cache before it was fetched is planned again in the background,
// and its plan tasks then answer the same files.
func TestAsyncPlanEvictedIsPlannedAgain(t *testing.T) {
	f := newAsyncFixture(t)
	close(f.fs.gate)
	id := f.submit(t, "alice")
	waitFor(t, "completion", func() bool { return f.status(t, "alice", id) == "completed" })
	first := f.do(t, "alice", "GET", f.path+"/plan/"+id, "").Body.String()
	j, ok := f.h.plans.async.job(id)
	if !ok {
		t.Fatal("no job")
	}
	f.h.plans.results.Remove(j.key)
	if s := f.status(t, "alice", id); s != "submitted" {
		t.Fatalf("evicted plan: %s, want submitted", s)
	}
	waitFor(t, "completion again", func() bool { return f.status(t, "alice", id) == "completed" })
	if again := f.do(t, "alice", "GET", f.path+"/plan/"+id, "").Body.String(); again != first {
		t.Errorf("planned again:\n%s\nfirst:\n%s", again, first)
	}
}

// TestAsyncPlanTaskAfterEviction: a plan task of a background plan whose
// result has left the cache is served by planning it again the same way
// (by batches, on the pool): the same page as before.
func TestAsyncPlanTaskAfterEviction(t *testing.T) {
	f := newAsyncFixture(t)
	close(f.fs.gate)
	id := f.submit(t, "alice")
	waitFor(t, "completion", func() bool { return f.status(t, "alice", id) == "completed" })
	var done struct {
		PlanTasks []string `json:"plan-tasks"`
	}
	if err := json.Unmarshal(f.do(t, "alice", "GET", f.path+"/plan/"+id, "").Body.Bytes(), &done); err != nil || len(done.PlanTasks) == 0 {
		t.Fatalf("completed plan without plan tasks: %v", err)
	}
	body := `{"plan-task":"` + done.PlanTasks[0] + `"}`
	first := f.do(t, "alice", "POST", f.path+"/tasks", body)
	j, ok := f.h.plans.async.job(id)
	if !ok || first.Code != 200 {
		t.Fatalf("plan task: %d %s", first.Code, first.Body)
	}
	f.h.plans.results.Remove(j.key)
	again := f.do(t, "alice", "POST", f.path+"/tasks", body)
	if again.Code != 200 || again.Body.String() != first.Body.String() {
		t.Errorf("plan task after eviction: %d %s\nfirst: %s", again.Code, again.Body, first.Body)
	}
}
