package restcat

import (
	"bytes"
	"compress/flate"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Defaults of asynchronous planning.
const (
	// DefaultAsyncThresholdFiles is the number of files (data and delete
	// files of the planned snapshot) above which a plan runs in the
	// background: a 50,000-file table plans asynchronously.
	DefaultAsyncThresholdFiles = 20_000
	// DefaultAsyncWorkers is the number of plans run at once, in total.
	DefaultAsyncWorkers = 2
	// DefaultAsyncQueue bounds the plans submitted and not yet finished
	// (running or waiting for a worker), in total.
	DefaultAsyncQueue = 64
	// DefaultAsyncPerPrincipal bounds those of one principal.
	DefaultAsyncPerPrincipal = 4
)

// AsyncPlanning bounds asynchronous planning: planTableScan of a snapshot
// with more than ThresholdFiles files answers "submitted" with a plan id,
// and the plan runs in the background; fetchPlanningResult answers its
// status (and, once completed, its first page and plan tasks) and
// cancelPlanning stops it. Zero values mean the defaults.
//
// Plans are held by the node that made them: a plan id fetched on another
// node is NoSuchPlanIdException (404), which iceberg-go returns as
// ErrPlanExpired (a plan to make again).
type AsyncPlanning struct {
	// ThresholdFiles is the number of files above which a plan runs in
	// the background (default DefaultAsyncThresholdFiles; negative: never).
	ThresholdFiles int
	// Workers is the number of plans run at once (default
	// DefaultAsyncWorkers).
	Workers int
	// Queue bounds the plans submitted and not finished, in total (default
	// DefaultAsyncQueue); PerPrincipal those of one principal (default
	// DefaultAsyncPerPrincipal). Beyond either, planTableScan of a large
	// table answers 503 with Retry-After.
	Queue        int
	PerPrincipal int
}

// Statuses of a plan, as the spec's PlanStatus names them.
const (
	planSubmitted = "submitted"
	planCompleted = "completed"
	planFailed    = "failed"
	planCancelled = "cancelled"
)

// asyncPlans runs large plans on a bounded pool of workers and keeps each
// plan's status, by plan id, until it expires.
type asyncPlans struct {
	cfg AsyncPlanning
	ttl time.Duration
	// batchFiles is planBatchFiles (tests lower it).
	batchFiles int
	now        func() time.Time
	sem        chan struct{} // one token per running plan
	base       context.Context
	stop       context.CancelFunc
	wg         sync.WaitGroup

	mu          sync.Mutex
	jobs        map[string]*planJob
	inflight    int            // submitted and not finished
	byPrincipal map[string]int // inflight, by principal
}

// planJob is one asynchronous plan. Its result, once completed, is in the
// planner's results cache under key (deflated): the job holds only its
// status, so a cancelled or finished plan holds no files.
type planJob struct {
	id, principal, table string
	key                  planKey
	epoch                int64 // revocation version at issue (PlanCancels)
	expires              time.Time
	cancel               context.CancelFunc
	done                 chan struct{} // closed when the work has stopped

	// Guarded by asyncPlans.mu.
	status string
	err    error
}

func newAsyncPlans(c AsyncPlanning, ttl time.Duration, now func() time.Time) *asyncPlans {
	if c.ThresholdFiles == 0 {
		c.ThresholdFiles = DefaultAsyncThresholdFiles
	}
	if c.Workers <= 0 {
		c.Workers = DefaultAsyncWorkers
	}
	if c.Queue <= 0 {
		c.Queue = DefaultAsyncQueue
	}
	if c.PerPrincipal <= 0 {
		c.PerPrincipal = DefaultAsyncPerPrincipal
	}
	if now == nil {
		now = time.Now
	}
	base, stop := context.WithCancel(context.Background())
	return &asyncPlans{cfg: c, ttl: ttl, now: now, batchFiles: planBatchFiles, sem: make(chan struct{}, c.Workers), base: base, stop: stop,
		jobs: map[string]*planJob{}, byPrincipal: map[string]int{}}
}

// Close stops the background plans and waits for them: those not finished
// are cancelled. The handler then plans large tables no more (they answer
// 503).
func (h *Handler) Close() {
	if h.plans == nil {
		return
	}
	h.plans.async.stop()
	h.plans.async.wg.Wait()
}

// large reports whether the plan of key should run in the background: its
// snapshot holds more files than the threshold. The count is the
// snapshot summary's total-data-files and total-delete-files, or, without
// them, the manifest list's file counts.
func (a *asyncPlans) large(fsys icebergio.IO, st *catalog.TableState, key planKey) bool {
	if a.cfg.ThresholdFiles < 0 || key.snapshot == 0 {
		return false
	}
	snap := st.Metadata.SnapshotByID(key.snapshot)
	if snap == nil {
		return false
	}
	if snap.Summary != nil {
		d, errD := strconv.Atoi(snap.Summary.Properties["total-data-files"])
		x, errX := strconv.Atoi(snap.Summary.Properties["total-delete-files"])
		if errD == nil {
			if errX != nil {
				x = 0
			}
			return d+x > a.cfg.ThresholdFiles
		}
	}
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return false // planning will report it
	}
	n := 0
	for _, m := range mfs {
		n += int(m.AddedDataFiles() + m.ExistingDataFiles())
	}
	return n > a.cfg.ThresholdFiles
}

// job returns the live asynchronous plan of id.
func (a *asyncPlans) job(id string) (*planJob, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	j, ok := a.jobs[id]
	if !ok {
		return nil, false
	}
	if !a.now().Before(j.expires) {
		j.cancel()
		delete(a.jobs, id)
		return nil, false
	}
	return j, true
}

// admit registers a new job, or refuses with Unavailable when the bounds
// are reached.
func (a *asyncPlans) admit(j *planJob) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.base.Err() != nil {
		return floe.E(floe.Unavailable, "", "the server is shutting down: plan the scan on another node or later")
	}
	if len(a.jobs) >= maxPlanHandles {
		now := a.now()
		for id, old := range a.jobs {
			if !now.Before(old.expires) {
				old.cancel()
				delete(a.jobs, id)
			}
		}
	}
	switch {
	case a.inflight >= a.cfg.Queue || len(a.jobs) >= maxPlanHandles:
		return floe.E(floe.Unavailable, "", "too many scan plans in progress on this server (%d): retry later", a.cfg.Queue)
	case a.byPrincipal[j.principal] >= a.cfg.PerPrincipal:
		return floe.E(floe.Unavailable, "", "too many scan plans of yours in progress (%d): retry later, or cancel plans no longer needed", a.cfg.PerPrincipal)
	}
	a.inflight++
	a.byPrincipal[j.principal]++
	a.jobs[j.id] = j
	return nil
}

// finish records a job's end and releases its place in the bounds.
func (a *asyncPlans) finish(j *planJob, status string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if j.status == planSubmitted {
		j.status, j.err = status, err
	}
	a.inflight--
	if a.byPrincipal[j.principal]--; a.byPrincipal[j.principal] <= 0 {
		delete(a.byPrincipal, j.principal)
	}
}

// state returns a job's status and error.
func (a *asyncPlans) state(j *planJob) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return j.status, j.err
}

// restart puts a completed job whose result has left the cache back to
// work, reporting whether it did (false: it is no longer completed).
func (a *asyncPlans) restart(j *planJob) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if j.status != planCompleted {
		return false
	}
	j.status = planSubmitted
	a.inflight++
	a.byPrincipal[j.principal]++
	return true
}

// submitPlan starts the plan of a large table in the background and
// answers "submitted" with its plan id.
func (h *Handler) submitPlan(w http.ResponseWriter, r *http.Request, st *catalog.TableState, key planKey,
	scan func(*table.Table) *scanPlan, req planRequest) error {
	a := h.plans.async
	if req.SnapshotID == nil && req.EndSnapshotID == nil && key.snapshot != 0 {
		req.SnapshotID = &key.snapshot // plan tasks and restarts plan the same snapshot
	}
	expires := a.now().Add(a.ttl)
	hd := planHandle{key: key, principal: planPrincipal(r), table: key.table, req: req, async: true, expires: expires, epoch: h.plans.epoch()}
	planID, err := h.plans.issuePlanID(r.Context(), hd, expires)
	if err != nil {
		return floe.Wrap(floe.Internal, err, "cannot issue a plan id")
	}
	j := &planJob{id: planID, principal: hd.principal, table: key.table, key: key, expires: expires, epoch: hd.epoch,
		status: planSubmitted, cancel: func() {}}
	if err := a.admit(j); err != nil {
		return err
	}
	h.plans.handles.Add(planID, hd, hd.size())
	h.start(j, st, scan)
	h.auditPlan(r, map[string]any{"plan_id": planID, "snapshot_id": key.snapshot, "status": planSubmitted})
	writeJSON(w, http.StatusOK, map[string]string{"status": planSubmitted, "plan-id": planID})
	return nil
}

// adoptAsync answers fetchPlanningResult of a background plan another node
// issued and this node holds no result of: it plans it here, in the
// background and within this node's bounds, and answers its status.
func (h *Handler) adoptAsync(w http.ResponseWriter, r *http.Request, wh string, id catalog.Ident, st *catalog.TableState,
	write bool, hd planHandle, planID string) error {
	key, scan, err := h.scanOf(st, id, hd.req)
	key.pageSize = hd.key.pageSize
	same := key
	same.current, same.policy = hd.key.current, hd.key.policy
	if err != nil || same != hd.key {
		return floe.E(floe.NotFound, "plan-id", "the plan's snapshot is no longer in table %s: plan the scan again", id)
	}
	j, err := h.ensureJob(st, scan, hd, planID)
	if err != nil {
		return err
	}
	return h.fetchAsync(w, r, wh, id, st, write, j)
}

// ensureJob returns this node's background job of plan id planID, starting
// it (within the bounds of admit) if there is none.
func (h *Handler) ensureJob(st *catalog.TableState, scan func(*table.Table) *scanPlan, hd planHandle, planID string) (*planJob, error) {
	a := h.plans.async
	if j, ok := a.job(planID); ok {
		return j, nil
	}
	exp := hd.expires
	if exp.IsZero() {
		exp = a.now().Add(a.ttl)
	}
	j := &planJob{id: planID, principal: hd.principal, table: hd.table, key: hd.key, expires: exp, epoch: hd.epoch,
		status: planSubmitted, cancel: func() {}}
	a.mu.Lock()
	old, dup := a.jobs[planID]
	a.mu.Unlock()
	if dup { // adopted by a concurrent request
		return old, nil
	}
	if err := a.admit(j); err != nil {
		return nil, err
	}
	h.start(j, st, scan)
	return j, nil
}

// awaitAsync returns the result of background plan hd, planning it on
// this node's pool if it is not there, and waiting for it (plan tasks have
// no "submitted" answer). A cancelled plan is NotFound (entity what).
func (h *Handler) awaitAsync(ctx context.Context, st *catalog.TableState, scan func(*table.Table) *scanPlan, hd planHandle, planID, what string) (*planResult, error) {
	a := h.plans.async
	j, err := h.ensureJob(st, scan, hd, planID)
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		a.mu.Lock()
		done := j.done
		a.mu.Unlock()
		if done != nil {
			select {
			case <-done:
			case <-ctx.Done():
				return nil, floe.Wrap(floe.Unavailable, ctx.Err(), "the plan is still running: retry the plan task")
			}
		}
		status, perr := a.state(j)
		switch status {
		case planFailed:
			return nil, perr
		case planCompleted:
			if res, ok := h.plans.results.Get(hd.key); ok {
				return res, nil
			}
			// Completed, and its result has left the cache since: plan it
			// again, once.
			if try == 0 && a.restart(j) {
				h.start(j, st, scan)
				continue
			}
		}
		return nil, floe.E(floe.NotFound, what, "plan task does not exist or has expired: plan the scan again")
	}
}

// start runs job j on the worker pool.
func (h *Handler) start(j *planJob, st *catalog.TableState, scan func(*table.Table) *scanPlan) {
	a := h.plans.async
	ctx, cancel := context.WithTimeout(a.base, j.expires.Sub(a.now())) // the injected clock may not be the real one
	done := make(chan struct{})
	a.mu.Lock()
	j.cancel, j.done = cancel, done
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(done)
		defer cancel()
		select {
		case a.sem <- struct{}{}:
		case <-ctx.Done():
			a.finish(j, planCancelled, nil)
			return
		}
		defer func() { <-a.sem }()
		start := time.Now()
		res, err := h.planLarge(ctx, st, j.key, scan)
		switch {
		case ctx.Err() != nil:
			a.finish(j, planCancelled, nil)
			return
		case err != nil:
			h.log.Warn("asynchronous scan plan failed", "plan_id", j.id, "table", j.table, "err", err)
			a.finish(j, planFailed, err)
			return
		}
		if !h.plans.results.Add(j.key, res, res.size()) {
			a.finish(j, planFailed, floe.E(floe.Unsupported, "",
				"the plan of %d files (%d bytes deflated) is larger than the server keeps (scan_planning.cache_bytes): narrow the scan with a filter", res.dataFiles, res.size()))
			return
		}
		h.log.Info("asynchronous scan plan completed", "plan_id", j.id, "table", j.table, "data_files", res.dataFiles,
			"pages", len(res.pages), "bytes", res.size(), "duration", time.Since(start))
		a.finish(j, planCompleted, nil)
	}()
}

// owns reports whether the request's caller planned job j on the
// request's table; any other caller is told the plan id does not exist.
func owns(r *http.Request, st *catalog.TableState, j *planJob) error {
	if j.principal != planPrincipal(r) || j.table != st.Metadata.TableUUID().String() {
		return floe.E(floe.NotFound, "plan-id", "plan %s does not exist or has expired: plan the scan again", shortPlanID(j.id))
	}
	return nil
}

// fetchAsync answers fetchPlanningResult for an asynchronous plan: its
// status, and once completed its first page and plan tasks.
func (h *Handler) fetchAsync(w http.ResponseWriter, r *http.Request, wh string, id catalog.Ident, st *catalog.TableState,
	write bool, j *planJob) error {
	if err := owns(r, st, j); err != nil {
		return err
	}
	a := h.plans.async
	status, perr := a.state(j)
	if status == planCompleted {
		if res, ok := h.plans.results.Get(j.key); ok {
			return h.writeCompleted(w, r, wh, id, st, write, j.id, res, nil) // whole-table plans only
		}
		// The result has left the cache: plan it again, in the background.
		hd, err := h.handle(r, st, j.id, "plan-id")
		if err != nil {
			return err
		}
		key, scan, err := h.scanOf(st, id, hd.req)
		same := key
		same.current = hd.key.current
		if err != nil || same != hd.key {
			return floe.E(floe.NotFound, "plan-id", "the plan's snapshot is no longer in table %s: plan the scan again", id)
		}
		if a.restart(j) {
			h.start(j, st, scan)
		}
		status = planSubmitted
	}
	if status == planFailed {
		// The spec's FailedPlanningResult (an error response with a
		// status) admits no value, as IcebergErrorResponse allows no other
		// property: a failed plan is answered with its error response,
		// "a valid error response" as the spec's text asks.
		return perr
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": status})
	return nil
}

// cancelAsync serves cancelPlanning of an asynchronous plan: its work is
// stopped, its result and plan tasks forgotten; fetchPlanningResult then
// answers "cancelled" until the plan id expires.
func (h *Handler) cancelAsync(w http.ResponseWriter, r *http.Request, st *catalog.TableState, j *planJob) error {
	if err := owns(r, st, j); err != nil {
		return err
	}
	if err := h.plans.shareCancel(r.Context(), j.id, j.expires); err != nil {
		return err
	}
	h.plans.cancelJob(j)
	h.plans.handles.Remove(j.id)
	h.plans.cancelled.Add(j.id, struct{}{}, int64(len(j.id))+64)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// add appends an encoded page, deflated when the plan is zipped.
func (p *planResult) add(pg []byte) {
	if !p.zipped {
		p.pages = append(p.pages, pg)
		return
	}
	var buf bytes.Buffer
	zw, _ := flate.NewWriter(&buf, flate.BestSpeed) // the level is valid
	_, _ = zw.Write(pg)                             // a bytes.Buffer does not fail
	_ = zw.Close()
	p.pages = append(p.pages, bytes.Clone(buf.Bytes()))
}

// page returns encoded page i, inflated.
func (p *planResult) page(i int) ([]byte, error) {
	if !p.zipped {
		return p.pages[i], nil
	}
	b, err := io.ReadAll(flate.NewReader(bytes.NewReader(p.pages[i])))
	if err != nil {
		return nil, floe.Wrap(floe.Internal, err, "cannot read the plan's page %d", i)
	}
	return b, nil
}

// cancelJob stops job j's work and drops its result; fetchPlanningResult
// then answers "cancelled" until the plan id expires.
func (p *planner) cancelJob(j *planJob) {
	a := p.async
	a.mu.Lock()
	wasCompleted := j.status == planCompleted
	j.status, j.err = planCancelled, nil
	cancel := j.cancel
	a.mu.Unlock()
	cancel()
	if wasCompleted {
		p.results.Remove(j.key)
	}
}
