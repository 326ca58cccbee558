package restcat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/objstore"
)

// Defaults of server-side scan planning.
const (
	DefaultPlanPageSize     = 1000
	DefaultPlanCacheEntries = 256
	DefaultPlanCacheBytes   = 64 << 20
	DefaultPlanTTL          = 15 * time.Minute
	// maxPlanHandles and maxPlanHandleBytes bound the plan ids handed out
	// and not yet expired (each holds its request, to plan again).
	maxPlanHandles     = 10_000
	maxPlanHandleBytes = 32 << 20
)

// Planning configures server-side scan planning (planTableScan,
// fetchPlanningResult, cancelPlanning, fetchScanTasks). Plans are
// synchronous: planTableScan answers "completed" with the first page of
// file scan tasks and one plan task per further page.
type Planning struct {
	// FS reads the tables' manifest lists and manifests.
	FS icebergio.IO
	// PageSize is the number of file scan tasks per response (default
	// DefaultPlanPageSize): a plan of more lists its first page and a plan
	// task for each further page.
	PageSize int
	// CacheEntries and CacheBytes bound the plans kept for paging and
	// reuse, by count and by encoded size (defaults DefaultPlanCacheEntries
	// and DefaultPlanCacheBytes); least recently used plans go first.
	CacheEntries int
	CacheBytes   int64
	// TTL is how long a plan id and its plan tasks stay valid (default
	// DefaultPlanTTL), never longer than the credentials vended with it.
	TTL time.Duration
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Async bounds asynchronous planning of large tables (see
	// AsyncPlanning in planasync.go).
	Async AsyncPlanning
	// ManifestCacheBytes bounds the manifest lists and manifests kept in
	// memory for planning (default DefaultManifestCacheBytes; negative:
	// none). See manifestcache.go.
	ManifestCacheBytes int64
	// Signer, if set, signs plan ids with a key all nodes share: a plan id
	// then carries its request, principal, table and expiry, and any node
	// answers it and its plan tasks (see planid.go). Nil: plan ids are
	// known only to the node that issued them.
	Signer PlanSigner
	// Cancels, if set, shares cancelled plans among the nodes: a plan
	// cancelled on one is cancelled on all within a revocation refresh.
	// Nil: a cancel holds on the node that took it.
	Cancels PlanCancels
}

// planner holds the plan caches of a Handler.
type planner struct {
	cfg Planning
	// results are encoded plans by what determines them (table, snapshot,
	// filter, options): a plan is shared by every principal that may read
	// the whole table, as the files it lists are the same.
	results *boundedLRU[planKey, *planResult]
	// handles are the plan ids handed to clients, each bound to the
	// principal and table it was planned for. Async planning will keep a
	// handle's status here while its result is computed.
	handles *boundedLRU[string, planHandle]
	// signable are, by principal and table, the files of the policy-filtered
	// plans made for remote signing: the only objects Floe signs reads of
	// for such a principal.
	signable *boundedLRU[string, *signSet]
	// async runs the plans of large tables in the background.
	async *asyncPlans
	// cancelled are the plan ids cancelled on this node: a signed plan id
	// would otherwise describe its plan again.
	cancelled *boundedLRU[string, struct{}]
}

func newPlanner(p Planning, vendTTL time.Duration) *planner {
	if p.PageSize <= 0 {
		p.PageSize = DefaultPlanPageSize
	}
	if p.CacheEntries <= 0 {
		p.CacheEntries = DefaultPlanCacheEntries
	}
	if p.CacheBytes <= 0 {
		p.CacheBytes = DefaultPlanCacheBytes
	}
	if p.TTL <= 0 {
		p.TTL = DefaultPlanTTL
	}
	if vendTTL > 0 && p.TTL > vendTTL {
		p.TTL = vendTTL
	}
	if p.ManifestCacheBytes == 0 {
		p.ManifestCacheBytes = DefaultManifestCacheBytes
	}
	if p.ManifestCacheBytes > 0 && p.FS != nil {
		p.FS = newManifestCache(p.FS, p.ManifestCacheBytes, p.Now)
	}
	return &planner{cfg: p,
		results:   newBoundedLRU[planKey, *planResult](p.CacheEntries, p.CacheBytes, p.TTL, p.Now),
		handles:   newBoundedLRU[string, planHandle](maxPlanHandles, maxPlanHandleBytes, p.TTL, p.Now),
		signable:  newBoundedLRU[string, *signSet](maxPlanHandles, maxPlanHandleBytes, p.TTL, p.Now),
		async:     newAsyncPlans(p.Async, p.TTL, p.Now),
		cancelled: newBoundedLRU[string, struct{}](maxPlanHandles, maxPlanHandleBytes, p.TTL, p.Now)}
}

// planKey is what a plan's result depends on.
type planKey struct {
	table           string // table uuid
	snapshot, start int64  // snapshot (end of an incremental scan); start of one, or -1
	filter          string // canonical JSON of the parsed filter
	caseSensitive   bool
	snapshotSchema  bool
	selected, stats string // comma-joined field names and ids
	current         bool   // snapshot is the table's current one
	policy          string // the caller's row policy (planPolicy.key), "" for whole-table readers
	pageSize        int    // file scan tasks per page: nodes planning again page alike
}

// planResult is an encoded plan: its pages, each the members of a ScanTasks
// object (without braces or plan-tasks).
type planResult struct {
	pages      [][]byte // each deflated when zipped (see page)
	zipped     bool
	snapshot   int64
	dataFiles  int
	deleteFile int
	// Of a policy-filtered plan: the data files left out, and the files
	// listed (data and delete), which its credential reads.
	filtered bool
	withheld int
	files    []string
}

func (p *planResult) size() int64 {
	n := int64(64)
	for _, f := range p.files {
		n += int64(len(f)) + 16
	}
	for _, pg := range p.pages {
		n += int64(len(pg)) + 24
	}
	return n
}

// planHandle is a plan id handed to a client: what it was planned for,
// and the request with its snapshot fixed, to plan again the same files
// when the plan has left the results cache.
type planHandle struct {
	key       planKey
	principal string
	table     string // table uuid
	req       planRequest
	async     bool      // planned in the background (planLarge), and so again
	expires   time.Time // of a signed plan id (zero: the TTL from now)
	epoch     int64     // revocation version at issue (PlanCancels)
}

func (hd planHandle) size() int64 {
	n := int64(512 + len(hd.req.Filter) + len(hd.key.filter) + len(hd.key.selected) + len(hd.key.stats))
	for _, s := range append(slices.Clone(hd.req.Select), hd.req.StatsFields...) {
		n += int64(len(s)) + 16
	}
	return n
}

type planRequest struct {
	SnapshotID        *int64          `json:"snapshot-id"`
	Select            []string        `json:"select"`
	Filter            json.RawMessage `json:"filter"`
	CaseSensitive     *bool           `json:"case-sensitive"`
	UseSnapshotSchema bool            `json:"use-snapshot-schema"`
	StartSnapshotID   *int64          `json:"start-snapshot-id"`
	EndSnapshotID     *int64          `json:"end-snapshot-id"`
	StatsFields       []string        `json:"stats-fields"`
	MinRowsRequested  *int64          `json:"min-rows-requested"`
}

// planRoutes are the scan planning operations, when planning is on.
func (h *Handler) planRoutes(ns string) []route {
	if h.plans == nil {
		return nil
	}
	t := ns + "/tables/{table}"
	return []route{
		{"POST", t + "/plan", false, h.planTableScan, "planTableScan"},
		{"GET", t + "/plan/{planid}", false, h.fetchPlanningResult, "fetchPlanningResult"},
		{"DELETE", t + "/plan/{planid}", false, h.cancelPlanning, "cancelPlanning"},
		{"POST", t + "/tasks", false, h.fetchScanTasks, "fetchScanTasks"},
	}
}

// isPlanRoute reports whether an operation is one of scan planning's,
// which foreign catalogs do not serve.
func isPlanRoute(name string) bool {
	switch name {
	case "planTableScan", "fetchPlanningResult", "cancelPlanning", "fetchScanTasks":
		return true
	}
	return false
}

// planReadable checks that the caller may read the table's files, as
// loadTable's credential vending decides, and returns whether it may
// write them. A caller whose SELECT carries a data filter gets filtered:
// its plan must go through planPolicy, which refuses it (with loadTable's
// reason and where to read the table instead) unless the filter can be
// proven on each file. Any other denial is returned.
func (h *Handler) planReadable(r *http.Request, wh string, id catalog.Ident) (write, filtered bool, err error) {
	write, denied := h.fileAccess(r, wh, id)
	if denied == nil {
		return write, false, nil
	}
	if floe.KindOf(denied) != floe.Forbidden {
		return false, false, denied
	}
	if h.filtered(r, wh, id) {
		return false, true, nil
	}
	return false, false, h.planDenied(r, wh, id, denied, "")
}

// planPrincipal identifies the caller a plan id is bound to.
func planPrincipal(r *http.Request) string {
	if c, ok := auth.ClaimsFrom(r.Context()); ok {
		return c.PrincipalID + "/" + c.Principal
	}
	return ""
}

// planTableScan serves POST .../plan: it plans the scan now and answers
// "completed" with the first page of tasks.
func (h *Handler) planTableScan(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req planRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeBytes(body, &req); err != nil {
			return err
		}
	}
	write, filtered, err := h.planReadable(r, wh, id)
	if err != nil {
		return err
	}
	st, err := h.cat.LoadTable(r.Context(), wh, id)
	if err != nil {
		return err
	}
	pol, err := h.planPolicy(r, wh, id, st, filtered)
	if err != nil {
		return err
	}
	key, scan, err := h.scanOf(st, id, req)
	if err != nil {
		return err
	}
	key.policy = pol.key()
	res, ok := h.plans.results.Get(key)
	// A policy-filtered plan is made now (its files are decided one by
	// one, and at most vend.MaxFiles get a credential): never in the
	// background, whose batches plan whole tables.
	if !ok && pol == nil && h.plans.async.large(h.plans.cfg.FS, st, key) {
		return h.submitPlan(w, r, st, key, scan, req)
	}
	if !ok {
		if res, err = h.plan(r.Context(), st, key, scan, pol); err != nil {
			return err
		}
		h.plans.results.Add(key, res, res.size())
	}
	if req.SnapshotID == nil && req.EndSnapshotID == nil && key.snapshot != 0 {
		req.SnapshotID = &key.snapshot // later pages plan the same snapshot
	}
	hd := planHandle{key: key, principal: planPrincipal(r), table: key.table, req: req, epoch: h.plans.epoch()}
	planID, err := h.plans.issuePlanID(r.Context(), hd, h.plans.now().Add(h.plans.cfg.TTL))
	if err != nil {
		return floe.Wrap(floe.Internal, err, "cannot issue a plan id")
	}
	h.plans.handles.Add(planID, hd, hd.size())
	detail := map[string]any{"plan_id": planID, "snapshot_id": res.snapshot, "data_files": res.dataFiles,
		"delete_files": res.deleteFile, "pages": len(res.pages)}
	if res.filtered {
		detail["policy_filtered"], detail["withheld_data_files"] = true, res.withheld
	}
	h.auditPlan(r, detail)
	if res.filtered && delegation(r) == delegateSign {
		h.plans.allowSigning(planPrincipal(r), key.table, pol.key(), res.files)
	}
	return h.writeCompleted(w, r, wh, id, st, write, planID, res, pol)
}

// scanOf validates a planning request against the table and returns its
// cache key and the scan that plans it.
func (h *Handler) scanOf(st *catalog.TableState, id catalog.Ident, req planRequest) (planKey, func(*table.Table) *scanPlan, error) {
	md := st.Metadata
	key := planKey{table: md.TableUUID().String(), start: -1, caseSensitive: req.CaseSensitive == nil || *req.CaseSensitive,
		snapshotSchema: req.UseSnapshotSchema, pageSize: h.plans.cfg.PageSize}
	incremental := req.StartSnapshotID != nil || req.EndSnapshotID != nil
	if incremental && req.SnapshotID != nil {
		return key, nil, floe.E(floe.Invalid, "", "snapshot-id cannot be combined with start-snapshot-id or end-snapshot-id")
	}
	if req.StartSnapshotID != nil && req.EndSnapshotID == nil {
		return key, nil, floe.E(floe.Invalid, "", "end-snapshot-id is required with start-snapshot-id")
	}
	if req.MinRowsRequested != nil && *req.MinRowsRequested < 0 {
		return key, nil, floe.E(floe.Invalid, "", "min-rows-requested must not be negative")
	}
	var snap *table.Snapshot
	switch {
	case req.SnapshotID != nil:
		snap = md.SnapshotByID(*req.SnapshotID)
	case req.EndSnapshotID != nil:
		snap = md.SnapshotByID(*req.EndSnapshotID)
	default:
		snap = md.CurrentSnapshot()
	}
	if snap == nil && (req.SnapshotID != nil || req.EndSnapshotID != nil) {
		n := req.SnapshotID
		if n == nil {
			n = req.EndSnapshotID
		}
		return key, nil, floe.E(floe.Invalid, "", "snapshot %d does not exist in table %s", *n, id)
	}
	if snap != nil {
		key.snapshot = snap.SnapshotID
	}
	if req.StartSnapshotID != nil {
		if md.SnapshotByID(*req.StartSnapshotID) == nil {
			return key, nil, floe.E(floe.Invalid, "", "snapshot %d does not exist in table %s", *req.StartSnapshotID, id)
		}
		if !isAncestor(md, *req.StartSnapshotID, snap) {
			return key, nil, floe.E(floe.Invalid, "", "start-snapshot-id %d is not an ancestor of end-snapshot-id %d", *req.StartSnapshotID, snap.SnapshotID)
		}
		key.start = *req.StartSnapshotID
	}
	// A scan of another snapshot than the current one reads with that
	// snapshot's schema (iceberg-go binds the filter to it), as the spec
	// asks of time travel; use-snapshot-schema asks it of any scan.
	schema := md.CurrentSchema()
	key.current = snap == nil || (md.CurrentSnapshot() != nil && snap.SnapshotID == md.CurrentSnapshot().SnapshotID)
	if (req.UseSnapshotSchema || !key.current) && snap != nil && snap.SchemaID != nil {
		for _, s := range md.Schemas() {
			if s.ID == *snap.SchemaID {
				schema = s
			}
		}
	}
	find := schema.FindFieldByName
	if !key.caseSensitive {
		find = schema.FindFieldByNameCaseInsensitive
	}
	selected := make([]string, 0, len(req.Select))
	for _, n := range req.Select {
		f, ok := find(n)
		if !ok {
			return key, nil, floe.E(floe.Invalid, "", "select: no column %q in table %s", n, id)
		}
		name, _ := schema.FindColumnName(f.ID)
		selected = append(selected, name)
	}
	var statsIDs []string
	stats := map[int]bool{}
	for _, n := range req.StatsFields {
		f, ok := find(n)
		if !ok {
			return key, nil, floe.E(floe.Invalid, "", "stats-fields: no column %q in table %s", n, id)
		}
		stats[f.ID] = true
		// A struct's statistics are its leaves'.
		for _, leaf := range leafIDs(f) {
			stats[leaf] = true
		}
	}
	for k := range stats {
		statsIDs = append(statsIDs, strconv.Itoa(k))
	}
	slices.Sort(statsIDs)
	key.selected, key.stats = strings.Join(selected, ","), strings.Join(statsIDs, ",")
	var filter iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	key.filter = "true"
	if len(req.Filter) > 0 && !bytes.Equal(bytes.TrimSpace(req.Filter), []byte("null")) {
		f, canon, err := parseFilter(req.Filter, schema, key.caseSensitive)
		if err != nil {
			return key, nil, err
		}
		filter, key.filter = f, canon
	}
	return key, func(t *table.Table) *scanPlan {
		return &scanPlan{tbl: t, filter: filter, selected: selected, stats: stats, key: key, snapshotSchema: schema}
	}, nil
}

// leafIDs returns the ids of the primitive fields under f (none if f is
// primitive).
func leafIDs(f iceberg.NestedField) []int {
	var out []int
	if nt, ok := f.Type.(iceberg.NestedType); ok {
		for _, c := range nt.Fields() {
			out = append(out, c.ID)
			out = append(out, leafIDs(c)...)
		}
	}
	return out
}

// isAncestor reports whether snapshot id is snap or one of its ancestors.
func isAncestor(md table.Metadata, id int64, snap *table.Snapshot) bool {
	for s := snap; s != nil; {
		if s.SnapshotID == id {
			return true
		}
		if s.ParentSnapshotID == nil {
			return false
		}
		s = md.SnapshotByID(*s.ParentSnapshotID)
	}
	return false
}

// scanPlan is a validated scan of one table version.
type scanPlan struct {
	tbl            *table.Table
	filter         iceberg.BooleanExpression
	selected       []string
	stats          map[int]bool
	key            planKey
	snapshotSchema *iceberg.Schema
	// zip marks a large (asynchronous) plan: its pages are kept deflated
	// and its decoded files dropped as they are encoded.
	zip bool
}

func (s *scanPlan) files(ctx context.Context) ([]table.FileScanTask, error) {
	opts := []table.ScanOption{table.WithRowFilter(s.filter), table.WithCaseSensitive(s.key.caseSensitive)}
	if len(s.selected) > 0 {
		opts = append(opts, table.WithSelectedFields(s.selected...))
	}
	if s.key.start >= 0 {
		return s.tbl.NewIncrementalAppendScan(opts...).FromSnapshotExclusive(s.key.start).ToSnapshot(s.key.snapshot).PlanFiles(ctx)
	}
	if s.key.snapshot == 0 && s.tbl.Metadata().CurrentSnapshot() == nil {
		return nil, nil // an empty table
	}
	if !s.key.current {
		opts = append(opts, table.WithSnapshotID(s.key.snapshot))
	}
	return s.tbl.Scan(opts...).PlanFiles(ctx)
}

// plan plans a scan and encodes its pages.
func (h *Handler) plan(ctx context.Context, st *catalog.TableState, key planKey, scanOf func(*table.Table) *scanPlan, pol *planPolicy) (*planResult, error) {
	fsys := h.plans.cfg.FS
	tbl := table.New(table.Identifier{"t"}, st.Metadata, st.Location, func(context.Context) (icebergio.IO, error) { return fsys, nil }, nil)
	sp := scanOf(tbl)
	tasks, err := sp.files(ctx)
	if errors.Is(err, iceberg.ErrInvalidArgument) || errors.Is(err, iceberg.ErrInvalidSchema) {
		return nil, floe.Wrap(floe.Invalid, err, "cannot plan the scan: %s", trimMsg(err.Error()))
	}
	if err != nil {
		return nil, floe.Wrap(floe.Internal, err, "cannot plan the scan")
	}
	tasks = lake.WholeFiles(tasks)
	withheld := 0
	if pol != nil {
		if tasks, withheld, err = pol.apply(st.Metadata, tasks); err != nil {
			return nil, err
		}
	}
	enc := &encoder{md: st.Metadata, stats: sp.stats, filter: sp.filter, specs: map[int32]*iceberg.PartitionSpec{}, partTypes: map[int32][]iceberg.Type{}}
	res := &planResult{snapshot: key.snapshot, dataFiles: len(tasks), zipped: sp.zip, filtered: pol != nil, withheld: withheld}
	if pol != nil {
		res.files = policyFiles(tasks)
	}
	deletes := map[string]bool{}
	size := key.pageSize
	if size <= 0 {
		size = h.plans.cfg.PageSize
	}
	for i := 0; i < len(tasks) || i == 0; i += size {
		chunk := tasks[i:min(i+size, len(tasks))]
		pg, err := enc.page(chunk)
		if err != nil {
			return nil, floe.Wrap(floe.Internal, err, "cannot encode the plan")
		}
		for _, d := range pg.DeleteFiles {
			deletes[d.FilePath] = true
		}
		b, err := json.Marshal(pg)
		if err != nil {
			return nil, floe.Wrap(floe.Internal, err, "cannot encode the plan")
		}
		res.add(b[1 : len(b)-1]) // the members, without braces
		if sp.zip {
			clear(chunk) // the decoded files of a large plan go as soon as they are encoded
		}
	}
	res.deleteFile = len(deletes)
	return res, nil
}

// writeCompleted answers with a completed plan: its first page, the plan
// tasks of the others, and storage credentials as loadTable vends them.
func (h *Handler) writeCompleted(w http.ResponseWriter, r *http.Request, wh string, id catalog.Ident, st *catalog.TableState,
	write bool, planID string, res *planResult, pol *planPolicy) error {
	var buf bytes.Buffer
	buf.WriteString(`{"status":"completed","plan-id":`)
	pid, _ := json.Marshal(planID)
	buf.Write(pid)
	if len(res.pages) > 1 {
		toks := make([]string, 0, len(res.pages)-1)
		for i := 1; i < len(res.pages); i++ {
			toks = append(toks, planTaskToken(planID, i))
		}
		b, _ := json.Marshal(toks)
		buf.WriteString(`,"plan-tasks":`)
		buf.Write(b)
	}
	creds, err := h.planCredentials(r, id, st, write, res, pol)
	if err != nil {
		return err
	}
	if creds != nil {
		b, _ := json.Marshal(creds)
		buf.WriteString(`,"storage-credentials":`)
		buf.Write(b)
		w.Header().Set("Cache-Control", "no-store")
	}
	first, err := res.page(0)
	if err != nil {
		return err
	}
	buf.WriteByte(',')
	buf.Write(first)
	buf.WriteByte('}')
	writeRaw(w, http.StatusOK, [][]byte{buf.Bytes()})
	return nil
}

// planCredentials returns the storage credentials loadTable would vend
// the caller for the table (the same credential, reused within its
// window), or nil when the server vends none or the client asked for
// remote signing (it signs with the table's loadTable configuration). A
// policy-filtered plan gets a credential for exactly its files.
func (h *Handler) planCredentials(r *http.Request, id catalog.Ident, st *catalog.TableState, write bool, res *planResult, pol *planPolicy) ([]storageCredential, error) {
	v := h.opts.Vending
	if v == nil || delegation(r) != delegateVended {
		return nil, nil
	}
	if res.filtered {
		return h.planFileCredentials(r, id, st, res, pol)
	}
	bucket, prefix, ok := objstore.LocationPrefix(st.Metadata.Location())
	if !ok {
		return nil, nil
	}
	acc, err := h.vendedAccess(r, id, bucket, prefix, write, true)
	if err != nil {
		return nil, err
	}
	return acc.StorageCredentials, nil
}

// handle returns the caller's live plan id of the request's table, or a
// NotFound error of entity what ("plan-id" or "plan-task"): a plan id of
// another principal or table does not exist for the caller.
func (h *Handler) handle(r *http.Request, st *catalog.TableState, planID, what string) (planHandle, error) {
	if _, gone := h.plans.cancelled.Get(planID); gone {
		if what == "plan-task" {
			return planHandle{}, floe.E(floe.NotFound, what, "plan task does not exist: its plan was cancelled; plan the scan again")
		}
		return planHandle{}, floe.E(floe.NotFound, what, "plan %s does not exist: it was cancelled; plan the scan again", shortPlanID(planID))
	}
	hd, ok := h.plans.handles.Get(planID)
	if !ok {
		// Another node's plan id (or this node's, evicted): it carries
		// its request, signed with a key all nodes share.
		if hd, ok = h.plans.openPlanID(r.Context(), planID); ok && hd.principal == planPrincipal(r) {
			h.plans.handles.Add(planID, hd, hd.size())
		}
	}
	expired := !hd.expires.IsZero() && !h.plans.now().Before(hd.expires)
	if !ok || expired || hd.principal != planPrincipal(r) || hd.table != st.Metadata.TableUUID().String() {
		if what == "plan-task" {
			return hd, floe.E(floe.NotFound, what, "plan task does not exist or has expired: plan the scan again")
		}
		return hd, floe.E(floe.NotFound, what, "plan %s does not exist or has expired: plan the scan again", shortPlanID(planID))
	}
	if h.plans.cancelledElsewhere(planID, hd.epoch) {
		h.plans.handles.Remove(planID)
		h.plans.cancelled.Add(planID, struct{}{}, int64(len(planID))+64)
		return h.handle(r, st, planID, what) // answered as cancelled
	}
	return hd, nil
}

// fetchPlanningResult serves GET .../plan/{plan-id}: a completed plan
// answers as planTableScan did.
func (h *Handler) fetchPlanningResult(w http.ResponseWriter, r *http.Request) error {
	wh, id, st, write, pol, err := h.planTable(r)
	if err != nil {
		return err
	}
	planID := r.PathValue("planid")
	if job, ok := h.plans.async.job(planID); ok {
		if h.plans.cancelledElsewhere(planID, job.epoch) {
			h.plans.cancelJob(job)
			h.plans.handles.Remove(planID)
			h.plans.cancelled.Add(planID, struct{}{}, int64(len(planID))+64)
		}
		if job.key.policy != pol.key() { // asynchronous plans are whole-table plans
			return floe.E(floe.NotFound, "plan-id", "the caller's access to table %s has changed since the plan: plan the scan again", id)
		}
		return h.fetchAsync(w, r, wh, id, st, write, job)
	}
	hd, err := h.handle(r, st, planID, "plan-id")
	if err != nil {
		return err
	}
	if !samePolicy(&hd, pol) {
		return floe.E(floe.NotFound, "plan-id", "the caller's access to table %s has changed since the plan: plan the scan again", id)
	}
	if hd.async {
		// Another node's background plan: plan it here, in the background.
		if _, ok := h.plans.results.Get(hd.key); !ok {
			return h.adoptAsync(w, r, wh, id, st, write, hd, planID)
		}
	}
	res, err := h.result(r.Context(), st, id, hd, planID, "plan-id", pol)
	if err != nil {
		return err
	}
	return h.writeCompleted(w, r, wh, id, st, write, planID, res, pol)
}

// cancelPlanning serves DELETE .../plan/{plan-id}: the plan id and its
// plan tasks are forgotten.
func (h *Handler) cancelPlanning(w http.ResponseWriter, r *http.Request) error {
	_, _, st, _, _, err := h.planTable(r)
	if err != nil {
		return err
	}
	planID := r.PathValue("planid")
	if job, ok := h.plans.async.job(planID); ok {
		return h.cancelAsync(w, r, st, job)
	}
	hd, err := h.handle(r, st, planID, "plan-id")
	if err != nil {
		return err
	}
	if err := h.plans.shareCancel(r.Context(), planID, hd.expires); err != nil {
		return err
	}
	h.plans.handles.Remove(planID)
	h.plans.cancelled.Add(planID, struct{}{}, int64(len(planID))+64)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fetchScanTasks serves POST .../tasks: the page a plan task names.
func (h *Handler) fetchScanTasks(w http.ResponseWriter, r *http.Request) error {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return err
	}
	var req struct {
		PlanTask string `json:"plan-task"`
	}
	if err := readJSON(r, &req, "plan-task"); err != nil {
		return err
	}
	_, filtered, err := h.planReadable(r, wh, id)
	if err != nil {
		return err
	}
	st, err := h.cat.LoadTable(r.Context(), wh, id)
	if err != nil {
		return err
	}
	pol, err := h.planPolicy(r, wh, id, st, filtered)
	if err != nil {
		return err
	}
	planID, page, ok := parsePlanTaskToken(req.PlanTask)
	if !ok {
		return floe.E(floe.NotFound, "plan-task", "plan task does not exist: it is not one this server handed out")
	}
	hd, err := h.handle(r, st, planID, "plan-task")
	if err != nil {
		return err
	}
	res, err := h.result(r.Context(), st, id, hd, planID, "plan-task", pol)
	if err != nil {
		return err
	}
	if page < 1 || page >= len(res.pages) {
		return floe.E(floe.NotFound, "plan-task", "plan task does not exist: it is not one this server handed out")
	}
	pg, err := res.page(page)
	if err != nil {
		return err
	}
	writeRaw(w, http.StatusOK, [][]byte{[]byte("{"), pg, []byte("}")})
	return nil
}

// result returns the plan of a live handle: from the results cache, or
// planned again (the same snapshot, filter and options give the same
// files) when it has been evicted or was too large to keep. A plan whose
// snapshot is gone, or planned under another row policy than the
// caller's now, is NotFound (entity what).
func (h *Handler) result(ctx context.Context, st *catalog.TableState, id catalog.Ident, hd planHandle, planID, what string, pol *planPolicy) (*planResult, error) {
	if !samePolicy(&hd, pol) {
		return nil, floe.E(floe.NotFound, what, "the caller's access to table %s has changed since the plan: plan the scan again", id)
	}
	if res, ok := h.plans.results.Get(hd.key); ok {
		return res, nil
	}
	key, scan, err := h.scanOf(st, id, hd.req)
	key.pageSize = hd.key.pageSize // the node that issued the plan id paged it
	same := key
	same.current = hd.key.current // the snapshot may no longer be the current one: the files are the same
	same.policy = pol.key()
	if err != nil || same != hd.key {
		return nil, floe.E(floe.NotFound, what, "the plan's snapshot is no longer in table %s: plan the scan again", id)
	}
	if hd.async {
		// A background plan is paged by batches (planLarge): its plan tasks
		// are served by planning it again so, on this node's pool.
		return h.awaitAsync(ctx, st, scan, hd, planID, what)
	}
	res, err := h.plan(ctx, st, key, scan, pol)
	if err != nil {
		return nil, err
	}
	h.plans.results.Add(hd.key, res, res.size())
	return res, nil
}

// planTable authorizes a request on an existing plan and loads its table,
// with the caller's row policy (nil for a whole-table reader).
func (h *Handler) planTable(r *http.Request) (string, catalog.Ident, *catalog.TableState, bool, *planPolicy, error) {
	wh, id, err := h.identRequest(r, "table")
	if err != nil {
		return "", id, nil, false, nil, err
	}
	write, filtered, err := h.planReadable(r, wh, id)
	if err != nil {
		return "", id, nil, false, nil, err
	}
	st, err := h.cat.LoadTable(r.Context(), wh, id)
	if err != nil {
		return "", id, nil, false, nil, err
	}
	pol, err := h.planPolicy(r, wh, id, st, filtered)
	if err != nil {
		return "", id, nil, false, nil, err
	}
	return wh, id, st, write, pol, nil
}

// auditPlan adds the plan's facts to the request's audit event.
func (h *Handler) auditPlan(r *http.Request, detail map[string]any) {
	if c, ok := r.Context().Value(callerKey{}).(*caller); ok && c != nil {
		c.detail = detail
	}
}

func newPlanID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Plan tasks are "pt1:<plan id>:<page>", base64url: opaque to clients,
// and meaningful only with the plan id's server-side handle, which binds
// it to the principal and table it was planned for.
func planTaskToken(planID string, page int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("pt1:" + planID + ":" + strconv.Itoa(page)))
}

func parsePlanTaskToken(tok string) (planID string, page int, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", 0, false
	}
	rest, ok := strings.CutPrefix(string(b), "pt1:")
	if !ok {
		return "", 0, false
	}
	planID, p, ok := strings.Cut(rest, ":")
	if !ok {
		return "", 0, false
	}
	page, err = strconv.Atoi(p)
	return planID, page, err == nil
}
