package app

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/floe-lake/floe/catalog"
)

// PurgeSettings configures how a drop with purge deletes the dropped
// table's files (YAML key purge; see docs/maintenance.md, "Purge").
type PurgeSettings struct {
	// Interval is how often the purge worker looks for pending purge jobs
	// left by any node (env FLOE_PURGE_INTERVAL, default 30s); a drop on
	// this node wakes it at once.
	Interval time.Duration `yaml:"interval"`
	// InlineFiles is how many files a drop deletes before it answers (env
	// FLOE_PURGE_INLINE_FILES, default 1000; 0: all in the background).
	InlineFiles int `yaml:"inline_files"`
	// LeaseTTL is how long a purge run holds its job without renewing it:
	// after a crash another node (or this one, restarted) resumes the job
	// once it expires (env FLOE_PURGE_LEASE_TTL, default 1m).
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// Batch is how many files a purge deletes between two checkpoints of
	// its job, and holds in memory at once (env FLOE_PURGE_BATCH, default
	// 256, at most 10000).
	Batch int `yaml:"batch"`
}

func defaultPurge() PurgeSettings {
	return PurgeSettings{Interval: catalog.DefaultPurgeInterval, InlineFiles: catalog.DefaultPurgeInlineFiles,
		LeaseTTL: catalog.DefaultPurgeLeaseTTL, Batch: catalog.DefaultPurgeBatch}
}

func (p *PurgeSettings) loadEnv(getenv func(string) string) error {
	for name, dst := range map[string]*time.Duration{"FLOE_PURGE_INTERVAL": &p.Interval, "FLOE_PURGE_LEASE_TTL": &p.LeaseTTL} {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = d
		}
	}
	for name, dst := range map[string]*int{"FLOE_PURGE_INLINE_FILES": &p.InlineFiles, "FLOE_PURGE_BATCH": &p.Batch} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = n
		}
	}
	return nil
}

func (p PurgeSettings) validate() error {
	switch {
	case p.Interval < 10*time.Millisecond:
		return fmt.Errorf("purge.interval %s: must be at least 10ms", p.Interval)
	case p.LeaseTTL < 100*time.Millisecond:
		return fmt.Errorf("purge.lease_ttl %s: must be at least 100ms", p.LeaseTTL)
	case p.Batch < 1 || p.Batch > 10000:
		return fmt.Errorf("purge.batch %d: must be between 1 and 10000", p.Batch)
	case p.InlineFiles < 0:
		return fmt.Errorf("purge.inline_files %d: must not be negative", p.InlineFiles)
	}
	return nil
}

// catalogOptions sets the purge fields of the catalog's options.
func (p PurgeSettings) catalogOptions(o *catalog.Options, hook func(ctx context.Context, file string) error) {
	o.PurgeInlineFiles = p.InlineFiles
	if o.PurgeInlineFiles == 0 {
		o.PurgeInlineFiles = -1
	}
	o.PurgeLeaseTTL = p.LeaseTTL
	o.PurgeBatch = p.Batch
	o.PurgeHook = hook
}

// startPurges runs the catalog's purge worker until stopPurges.
func (a *App) startPurges() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.cat.RunPurges(ctx, a.cfg.Purge.Interval)
	}()
	a.stopPurgeWorker = func() {
		cancel()
		<-done
	}
}

// stopPurges stops the purge worker (its current run releases its job).
func (a *App) stopPurges() {
	if a.stopPurgeWorker != nil {
		a.stopPurgeWorker()
		a.stopPurgeWorker = nil
	}
}
