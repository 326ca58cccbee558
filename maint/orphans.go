package maint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/subset"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/objstore/bucket"
)

// OrphansJob is the name of the Orphans job.
const OrphansJob = "remove-orphans"

// Uploads lists and aborts multipart uploads of the embedded object store
// (*bucket.Store).
type Uploads interface {
	ListMultipartUploads(ctx context.Context, bucket, prefix string) ([]bucket.Upload, error)
	AbortMultipart(ctx context.Context, bucket, key, uploadID string) error
}

// Orphans is the orphan-file removal job. It lists every object under the
// table's location and removes those that
//
//   - no snapshot of the table references: not a data or delete file of
//     any manifest of any snapshot (of every branch and tag), not a
//     manifest, manifest list, statistics or partition statistics file,
//     and not the current metadata file or one in its metadata log; and
//   - were last modified longer ago than the policy's safety window
//     (floe.maintenance.orphan.min-age, default 3 days, never under 1h).
//
// The window is what keeps the files of a commit in flight safe: a writer
// writes its files, then commits them, and no commit takes anywhere near
// an hour. (The one way to reference an old file that is not yet
// referenced is to register an existing file into the table, e.g. with
// add-files; register files from outside the table's location, or run
// add-files and orphan removal at different times.) The reference set is
// computed by iceberg-go's PlanOrphanFiles; after the listing, the table is
// reloaded, and if it changed meanwhile the plan is made again on the new
// metadata, so a commit that lands during the listing is seen.
//
// Objects under a directory of the location that holds another table's
// metadata (a table created with a location inside this one's) are never
// touched. Tables with gc.enabled=false are skipped: their files may
// belong to other tables too. On the embedded store, multipart uploads
// under the location begun before the window are aborted as well.
type Orphans struct {
	env *Env
	// Uploads, if set, is the embedded store whose abandoned multipart
	// uploads are aborted.
	Uploads Uploads
}

// NewOrphans returns the orphan removal job.
func NewOrphans(env *Env, uploads Uploads) *Orphans { return &Orphans{env: env, Uploads: uploads} }

// Name returns "remove-orphans".
func (j *Orphans) Name() string { return OrphansJob }

// Due reports whether the job is enabled and due on t at its tick.
func (j *Orphans) Due(ctx context.Context, t TableRef) (bool, error) {
	return j.env.due(ctx, t, func(p Policy) (bool, time.Duration) { return p.OrphanEnabled, p.OrphanInterval })
}

// Run removes the table's orphan files if its policy enables it and it is due.
func (j *Orphans) Run(ctx context.Context, t TableRef) (Result, error) {
	tbl, p, err := j.env.open(ctx, t.Warehouse, t.Ident)
	if gone(err) {
		return Result{Summary: "table no longer exists"}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("remove orphans of %s: %w", t, err)
	}
	if !p.OrphanEnabled {
		return Result{Summary: "orphan removal is off (" + PropOrphanEnabled + " or gc.enabled)"}, nil
	}
	if !due(t.Tick, j.env.Interval, p.OrphanInterval, t.String()) {
		return Result{Summary: "not due"}, nil
	}
	rep, err := j.remove(ctx, tbl, p, false)
	if err != nil {
		return Result{}, fmt.Errorf("remove orphans of %s: %w", t, err)
	}
	return rep.result(), nil
}

// RemoveOrphans removes the orphan files of table id now, whatever the
// schedule (but not if its policy disables it). With dryRun it only lists
// them.
func (j *Orphans) RemoveOrphans(ctx context.Context, wh string, id catalog.Ident, dryRun bool) (Report, error) {
	tbl, p, err := j.env.open(ctx, wh, id)
	if err != nil {
		return Report{}, err
	}
	if !p.OrphanEnabled {
		return Report{Job: OrphansJob, DryRun: dryRun, Summary: "orphan removal is off (" + PropOrphanEnabled + " or gc.enabled)"}, nil
	}
	return j.remove(ctx, tbl, p, dryRun)
}

// equalSchemes makes s3a:// and s3n:// references match s3:// listings.
var equalSchemes = map[string]string{"s3,s3a,s3n": "s3"}

func (j *Orphans) remove(ctx context.Context, tbl *table.Table, p Policy, dryRun bool) (Report, error) {
	rep := Report{Job: OrphansJob, DryRun: dryRun, Stats: map[string]int64{}}
	minAge := max(p.OrphanMinAge, MinOrphanAge)
	var plan table.OrphanCleanupPlan
	for attempt := 0; ; attempt++ {
		var err error
		plan, err = tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(minAge),
			table.WithEqualSchemes(equalSchemes), table.WithPrefixMismatchMode(table.PrefixMismatchIgnore))
		if err != nil {
			return rep, fmt.Errorf("plan: %w", err)
		}
		fresh, err := lake.Reload(ctx, tbl)
		if err != nil {
			return rep, err
		}
		if fresh.MetadataLocation() == tbl.MetadataLocation() {
			break
		}
		if attempt >= j.env.retries() {
			return rep, fmt.Errorf("the table kept changing while its files were listed (%d times); try again later", attempt+1)
		}
		tbl = fresh
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return rep, err
	}
	root := strings.TrimSuffix(tbl.Location(), "/") + "/"
	var nested []string
	if len(plan.Files()) > 0 {
		if nested, err = nestedTables(fsys, root); err != nil {
			return rep, err
		}
	}
	cutoff := j.env.now().Add(-minAge)
	for _, o := range plan.OrphanFiles() {
		if !strings.HasPrefix(o.Path, root) || within(nested, o.Path) {
			rep.stat("skipped_files", 1)
			continue
		}
		if subset.Live(o.Path, tbl.Metadata()) {
			// A share catalog's derived view of a live snapshot: recipients
			// read it (views of expired snapshots go like any orphan).
			rep.stat("share_view_files", 1)
			continue
		}
		if !dryRun {
			// PlanOrphanFiles' cutoff is its own clock's: check ours too.
			if info, err := statIO(fsys, o.Path); err == nil && !info.ModTime().Before(cutoff) {
				rep.stat("skipped_files", 1)
				continue
			}
			if err := fsys.Remove(o.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return rep, fmt.Errorf("remove %s: %w", o.Path, err)
			}
		}
		rep.stat("orphan_files", 1)
		rep.stat("orphan_bytes", o.SizeBytes)
		rep.file(o.Path)
	}
	if err := j.abortUploads(ctx, root, cutoff, dryRun, &rep); err != nil {
		return rep, err
	}
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	rep.Changed = !dryRun && (rep.Stats["orphan_files"] > 0 || rep.Stats["aborted_uploads"] > 0)
	rep.Summary = fmt.Sprintf("%s %d orphan files (%d bytes) older than %s and %d abandoned uploads",
		verb, rep.Stats["orphan_files"], rep.Stats["orphan_bytes"], minAge, rep.Stats["aborted_uploads"])
	return rep, nil
}

// abortUploads aborts the embedded store's multipart uploads under root
// begun before cutoff.
func (j *Orphans) abortUploads(ctx context.Context, root string, cutoff time.Time, dryRun bool, rep *Report) error {
	if j.Uploads == nil {
		return nil
	}
	b, prefix, err := objstore.ParseLocation(root)
	if err != nil {
		return nil // not the embedded store's location
	}
	ups, err := j.Uploads.ListMultipartUploads(ctx, b, prefix)
	if errors.Is(err, bucket.ErrNoSuchBucket) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list multipart uploads: %w", err)
	}
	for _, u := range ups {
		if !u.Initiated.Before(cutoff) {
			continue
		}
		if !dryRun {
			if err := j.Uploads.AbortMultipart(ctx, b, u.Key, u.UploadID); err != nil && !errors.Is(err, bucket.ErrNoSuchUpload) {
				return fmt.Errorf("abort multipart upload of %s: %w", u.Key, err)
			}
		}
		rep.stat("aborted_uploads", 1)
	}
	return nil
}

// nestedTables returns the directories under root (ending in "/") that
// hold another table's metadata files: <root><dir>/metadata/*.metadata.json.
func nestedTables(fsys icebergio.IO, root string) ([]string, error) {
	l, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("file IO %T cannot list files", fsys)
	}
	seen := map[string]bool{}
	var out []string
	err := l.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, ok := strings.CutPrefix(p, root)
		if !ok || d.IsDir() || !strings.HasSuffix(rel, ".metadata.json") {
			return nil
		}
		dir := path.Dir(rel) // <sub>/metadata
		if path.Base(dir) != "metadata" {
			return nil
		}
		sub := path.Dir(dir)
		if sub == "." || seen[sub] {
			return nil
		}
		seen[sub] = true
		out = append(out, root+sub+"/")
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	return out, nil
}

// within reports whether p lies under one of the directories dirs.
func within(dirs []string, p string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// statIO stats a file through fsys.
func statIO(fsys icebergio.IO, p string) (fs.FileInfo, error) {
	if s, ok := fsys.(icebergio.StatIO); ok {
		return s.Stat(p)
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}
