package catalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe"
)

// PurgeJob is the durable record of a dropped table whose files are still
// being deleted. The drop stores it in the same transaction that removes
// the table (Tombstone.Purge), so that a crash at any moment after the drop
// leaves a job a worker finishes; while it exists no table may be created,
// registered or moved at, inside or above Location, not even by an
// administrator.
type PurgeJob struct {
	Warehouse string
	// Location is the dropped table's base location (normalized): the purge
	// never deletes a file outside it.
	Location string
	// Ident is the name the table had when it was dropped.
	Ident Ident
	// MetadataLocation is the table's last metadata file.
	MetadataLocation string
	// Done counts the metadata files (in purge order: the metadata log,
	// oldest first, then MetadataLocation) whose files are all deleted.
	Done int
	// Attempts counts the runs that stopped on an error; LastError is the
	// last one's message.
	Attempts  int
	LastError string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Holder and Token are the run that holds the job (Token is the
	// fencing token: every acquisition increments it) until Expires.
	Holder  string
	Token   int64
	Expires time.Time
}

// PurgeQueue is implemented by stores that keep purge jobs. With it a drop
// with purge is crash-safe and asynchronous when large; without it the
// drop deletes the files before it answers.
type PurgeQueue interface {
	// PurgeJobs lists at most limit (<= 0: all) pending jobs of wh (""
	// for every warehouse), oldest first.
	PurgeJobs(ctx context.Context, wh string, limit int) ([]PurgeJob, error)
	// AcquirePurge takes the job at (wh, loc) for holder until now+ttl if
	// no run holds it (or its run's lease expired). ok is false when
	// another run holds it or there is no such job.
	AcquirePurge(ctx context.Context, wh, loc, holder string, ttl time.Duration) (j PurgeJob, ok bool, err error)
	// RenewPurge records j's progress (j.Done) and extends its lease to
	// now+ttl: Conflict if the run lost the job.
	RenewPurge(ctx context.Context, j PurgeJob, ttl time.Duration) error
	// ReleasePurge frees j at once, recording its progress and, when
	// lastErr is not empty, one more failed attempt: Conflict if lost.
	ReleasePurge(ctx context.Context, j PurgeJob, lastErr string) error
	// FinishPurge removes j, and the tombstone at its location, in one
	// transaction: Conflict if the run lost the job.
	FinishPurge(ctx context.Context, j PurgeJob) error
	// PurgeBlocker names a live table or view whose files may lie under
	// loc (a table at, inside or above it, or without a recorded
	// location whose metadata lies under it; a view whose metadata lies
	// under it), "" when there is none: the purge then deletes only the
	// files the dropped table's metadata references, not everything
	// under loc.
	PurgeBlocker(ctx context.Context, wh, loc string) (string, error)
}

// Purge defaults.
const (
	// DefaultPurgeInlineFiles is how many files a drop deletes before it
	// answers; a larger table's purge goes on in the background.
	DefaultPurgeInlineFiles = 1000
	// DefaultPurgeLeaseTTL is how long a purge run holds its job without
	// renewing it: how long the job of a node that died stays blocked.
	DefaultPurgeLeaseTTL = time.Minute
	// DefaultPurgeInterval is how often the worker looks for pending jobs
	// (a drop on this node wakes it at once).
	DefaultPurgeInterval = 30 * time.Second
	// DefaultPurgeBatch bounds the files deleted between two checkpoints
	// (and held in memory at once).
	DefaultPurgeBatch = 256
	// purgeParallel is how many deletions of a batch run at once.
	purgeParallel = 8
	// purgeJobsPerPass bounds the jobs one pass of the worker lists.
	purgeJobsPerPass = 64
)

// purger is the catalog's purge state.
type purger struct {
	inline int
	ttl    time.Duration
	hook   func(ctx context.Context, file string) error
	node   string
	batch  int
	kick   chan struct{}
}

func newPurger(o Options) *purger {
	p := &purger{inline: o.PurgeInlineFiles, ttl: o.PurgeLeaseTTL, hook: o.PurgeHook, node: o.Node, kick: make(chan struct{}, 1)}
	if p.inline == 0 {
		p.inline = DefaultPurgeInlineFiles
	}
	if p.batch = o.PurgeBatch; p.batch <= 0 {
		p.batch = DefaultPurgeBatch
	}
	if p.ttl <= 0 {
		p.ttl = DefaultPurgeLeaseTTL
	}
	if p.node == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		p.node = host + "-" + hex.EncodeToString(b[:])
	}
	return p
}

// PurgeJobs lists the pending purge jobs of wh ("" for every warehouse),
// oldest first, at most limit (<= 0: all). It answers an empty list when
// the store keeps no jobs (drops then purge before they answer).
func (c *Catalog) PurgeJobs(ctx context.Context, wh string, limit int) ([]PurgeJob, error) {
	q, ok := c.store.(PurgeQueue)
	if !ok {
		return []PurgeJob{}, nil
	}
	if wh != "" {
		if _, err := c.store.Warehouse(ctx, wh); err != nil {
			return nil, err
		}
	}
	return q.PurgeJobs(ctx, wh, limit)
}

// purgeDropped runs the purge of the table just dropped at loc: up to the
// inline budget now, the rest by the worker (which it wakes).
func (c *Catalog) purgeDropped(ctx context.Context, q PurgeQueue, wh, loc string) {
	ctx = context.WithoutCancel(ctx)
	defer c.KickPurges()
	if c.purges.inline < 0 {
		return
	}
	j, ok, err := q.AcquirePurge(ctx, wh, loc, c.purges.node, c.purges.ttl)
	if err != nil || !ok {
		if err != nil {
			c.log.WarnContext(ctx, "purge: cannot take the job", "location", loc, "err", err)
		}
		return
	}
	c.runPurge(ctx, q, j, c.purges.inline)
}

// KickPurges wakes the purge worker (RunPurges) of this catalog.
func (c *Catalog) KickPurges() {
	select {
	case c.purges.kick <- struct{}{}:
	default:
	}
}

// RunPurges is the purge worker: until ctx ends it takes every pending
// purge job no other run holds and deletes its files, at start, every
// interval and whenever a drop on this catalog leaves a job unfinished.
// Jobs whose run failed are tried again on the next pass. It returns at
// once when the store keeps no jobs.
func (c *Catalog) RunPurges(ctx context.Context, interval time.Duration) {
	q, ok := c.store.(PurgeQueue)
	if !ok {
		return
	}
	if interval <= 0 {
		interval = DefaultPurgeInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		c.PurgePass(ctx, q)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.purges.kick:
		}
	}
}

// PurgePass runs, one after the other, every pending purge job (at most
// purgeJobsPerPass) that no other run holds, each to its end. It returns
// how many it finished.
func (c *Catalog) PurgePass(ctx context.Context, q PurgeQueue) int {
	jobs, err := q.PurgeJobs(ctx, "", purgeJobsPerPass)
	if err != nil {
		if ctx.Err() == nil {
			c.log.WarnContext(ctx, "purge: cannot list jobs", "err", err)
		}
		return 0
	}
	n := 0
	for _, j := range jobs {
		if ctx.Err() != nil {
			return n
		}
		j, ok, err := q.AcquirePurge(ctx, j.Warehouse, j.Location, c.purges.node, c.purges.ttl)
		if err != nil || !ok {
			continue
		}
		if c.runPurge(ctx, q, j, -1) {
			n++
		}
	}
	return n
}

// runPurge deletes the files of a held job, at most budget of them (< 0:
// no limit), and finishes the job (true) or releases it.
func (c *Catalog) runPurge(ctx context.Context, q PurgeQueue, j PurgeJob, budget int) bool {
	r := &purgeRun{c: c, q: q, job: j, budget: budget, renewed: time.Now()}
	done, err := r.run(ctx)
	if errors.Is(err, errPurgeBudget) {
		err = nil
	}
	rctx := context.WithoutCancel(ctx)
	switch {
	case err == nil && done:
		if err := q.FinishPurge(rctx, r.job); err != nil {
			c.log.WarnContext(ctx, "purge: cannot finish the job", "table", j.Ident.String(), "location", j.Location, "err", err)
			return false
		}
		c.log.InfoContext(ctx, "purge: done", "table", j.Ident.String(), "location", j.Location, "files", r.deleted)
		return true
	case errors.Is(err, errPurgeLost):
		c.log.WarnContext(ctx, "purge: the job was taken over", "table", j.Ident.String(), "location", j.Location)
		return false
	}
	msg := ""
	if err != nil && ctx.Err() == nil { // a shutdown is no failed attempt
		msg = floe.PublicMessage(err)
		if msg == "" {
			msg = err.Error()
		}
		c.log.WarnContext(ctx, "purge: run failed; will retry", "table", j.Ident.String(), "location", j.Location, "err", err)
	}
	if err := q.ReleasePurge(rctx, r.job, msg); err != nil && floe.KindOf(err) != floe.Conflict {
		c.log.WarnContext(ctx, "purge: cannot release the job", "location", j.Location, "err", err)
	}
	return false
}

var (
	errPurgeLost   = errors.New("purge job lost")
	errPurgeBudget = errors.New("purge budget spent")
)

// purgeRun is one run over a purge job. Its memory is bounded by one
// batch of paths, one manifest list's manifest paths and the bytes of one
// metadata file and one manifest, whatever the table's size.
type purgeRun struct {
	c       *Catalog
	q       PurgeQueue
	job     PurgeJob
	budget  int
	deleted int
	batch   []string
	renewed time.Time
	outside int // referenced files outside the location, left alone
}

// run purges the job; done is false when the budget was spent first.
func (r *purgeRun) run(ctx context.Context) (bool, error) {
	j := &r.job
	var order []string
	var current table.Metadata
	raw, err := r.c.readMetadataFile(ctx, j.MetadataLocation)
	if err == nil {
		current, err = table.ParseMetadataBytes(raw)
	}
	raw = nil
	switch {
	case err == nil:
		for e := range current.PreviousFiles() {
			order = append(order, e.MetadataFile)
		}
		order = append(order, j.MetadataLocation)
	case floe.KindOf(err) == floe.NotFound:
		// Deleted by an earlier run (it is the last file deleted before the sweep).
	default:
		r.c.log.WarnContext(ctx, "purge: cannot read the last metadata; deleting the location only", "location", j.MetadataLocation, "err", err)
	}
	for i := j.Done; i < len(order); i++ {
		md := current
		if i < len(order)-1 {
			md = r.metadata(ctx, order[i])
		}
		if md != nil {
			if err := r.metadataFiles(ctx, md); err != nil {
				return false, err
			}
		}
		if err := r.del(ctx, order[i]); err != nil {
			return false, err
		}
		if err := r.flush(ctx); err != nil {
			return false, err
		}
		j.Done = i + 1
		if err := r.renew(ctx, true); err != nil {
			return false, err
		}
	}
	// Whatever else lies under the location: files written by failed
	// commits, orphans, statistics no metadata names any more.
	blocker, err := r.q.PurgeBlocker(ctx, j.Warehouse, j.Location)
	if err != nil {
		return false, err
	}
	if blocker != "" {
		r.c.log.WarnContext(ctx, "purge: keeping unreferenced files under the location, which may hold another entity's files",
			"location", j.Location, "entity", blocker)
		return true, nil
	}
	if !r.c.purgeable(ctx, j.Warehouse, j.Location) {
		r.c.log.WarnContext(ctx, "purge: not a table location of the warehouse; keeping unreferenced files", "location", j.Location)
		return true, nil
	}
	if err := r.renew(ctx, true); err != nil {
		return false, err
	}
	if err := r.hook(ctx, j.Location); err != nil {
		return false, err
	}
	if err := r.c.io.DeletePrefix(ctx, j.Location); err != nil {
		return false, fmt.Errorf("purge: delete under %s: %w", j.Location, err)
	}
	if r.outside > 0 {
		r.c.log.WarnContext(ctx, "purge: left files the table referenced outside its location", "location", j.Location, "files", r.outside)
	}
	return true, nil
}

// metadata reads an older metadata file; nil when it is gone or invalid
// (an earlier run deleted it after purging its files).
func (r *purgeRun) metadata(ctx context.Context, loc string) table.Metadata {
	if !Within(r.job.Location, loc) {
		return nil
	}
	raw, err := r.c.readMetadataFile(ctx, loc)
	if err != nil {
		return nil
	}
	md, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return nil
	}
	return md
}

// metadataFiles deletes what one metadata file references: each
// snapshot's data and delete files, then its manifests, then its manifest
// list, and the statistics files. A child is always deleted before the
// file that names it, so that a run that stops anywhere leaves every
// remaining file reachable for the next one.
func (r *purgeRun) metadataFiles(ctx context.Context, md table.Metadata) error {
	for _, s := range md.Snapshots() {
		if err := r.snapshot(ctx, s.ManifestList); err != nil {
			return err
		}
	}
	for st := range md.Statistics() {
		if err := r.del(ctx, st.StatisticsPath); err != nil {
			return err
		}
	}
	for st := range md.PartitionStatistics() {
		if err := r.del(ctx, st.StatisticsPath); err != nil {
			return err
		}
	}
	return r.flush(ctx)
}

func (r *purgeRun) snapshot(ctx context.Context, list string) error {
	if list == "" || !r.inside(list) {
		return nil
	}
	raw, err := r.c.io.ReadFile(ctx, list)
	if floe.KindOf(err) == floe.NotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("purge: read manifest list %s: %w", list, err)
	}
	manifests, err := r.c.scanner.ManifestPaths(raw)
	if err != nil {
		// Not a manifest list any reader understands: nothing to follow.
		r.c.log.WarnContext(ctx, "purge: unreadable manifest list", "location", list, "err", err)
		manifests = nil
	}
	raw = nil
	for _, m := range manifests {
		if !r.inside(m) {
			continue
		}
		if err := r.manifest(ctx, m); err != nil {
			return err
		}
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	return r.del(ctx, list)
}

func (r *purgeRun) manifest(ctx context.Context, m string) error {
	raw, err := r.c.io.ReadFile(ctx, m)
	if floe.KindOf(err) == floe.NotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("purge: read manifest %s: %w", m, err)
	}
	var stop error
	err = r.c.scanner.EntryPaths(raw, func(path string, _ int32) error {
		stop = r.del(ctx, path)
		return stop
	})
	if stop != nil {
		return stop
	}
	if err != nil {
		// A manifest no reader understands: nothing to follow.
		r.c.log.WarnContext(ctx, "purge: unreadable manifest", "location", m, "err", err)
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	return r.del(ctx, m)
}

// inside reports whether a referenced file lies in the table location,
// counting those that do not (they are never deleted).
func (r *purgeRun) inside(loc string) bool {
	if Within(r.job.Location, loc) {
		return true
	}
	r.outside++
	return false
}

// del queues the deletion of one file inside the location; a full batch
// is deleted at once.
func (r *purgeRun) del(ctx context.Context, loc string) error {
	if !r.inside(loc) {
		return nil
	}
	r.batch = append(r.batch, loc)
	limit := r.c.purges.batch
	if r.budget >= 0 {
		limit = max(1, min(limit, r.budget-r.deleted))
	}
	if len(r.batch) >= limit {
		return r.flush(ctx)
	}
	return nil
}

// flush deletes the queued files (purgeParallel at a time) and renews the
// job when a third of its lease has passed. It stops with errPurgeBudget
// once the run's budget is spent (after the batch: never half a batch).
func (r *purgeRun) flush(ctx context.Context) error {
	if len(r.batch) == 0 {
		return nil
	}
	for _, f := range r.batch {
		if err := r.hook(ctx, f); err != nil {
			return err
		}
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan string)
	)
	for range min(purgeParallel, len(r.batch)) {
		wg.Go(func() {
			for f := range next {
				if err := r.c.io.Delete(ctx, f); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("purge: delete %s: %w", f, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, f := range r.batch {
		next <- f
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	r.deleted += len(r.batch)
	r.batch = r.batch[:0]
	if err := r.renew(ctx, false); err != nil {
		return err
	}
	if r.budget >= 0 && r.deleted >= r.budget {
		return errPurgeBudget
	}
	return nil
}

func (r *purgeRun) hook(ctx context.Context, file string) error {
	if h := r.c.purges.hook; h != nil {
		return h(ctx, file)
	}
	return ctx.Err()
}

// renew records progress and extends the lease (always when force, else
// once a third of the lease has passed).
func (r *purgeRun) renew(ctx context.Context, force bool) error {
	if !force && time.Since(r.renewed) < r.c.purges.ttl/3 {
		return nil
	}
	if err := r.q.RenewPurge(ctx, r.job, r.c.purges.ttl); err != nil {
		if floe.KindOf(err) == floe.Conflict {
			return errPurgeLost
		}
		return err
	}
	r.renewed = time.Now()
	return nil
}
