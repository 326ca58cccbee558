package app

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/maint"
)

// auditPruneLease is the store lease nodes take turns pruning under.
const auditPruneLease = "audit/prune"

// auditPrunePause is the pause between two prune batches, so that a large
// backlog (the first run after retention is turned on) never holds the
// store's write lock for long against appends.
const auditPrunePause = 20 * time.Millisecond

// auditPruner deletes audit records older than the retention every
// interval, in batches, on one node at a time.
type auditPruner struct {
	log       *audit.Log
	leases    maint.Leases
	retention time.Duration
	interval  time.Duration
	batch     int
	node      string
	now       func() time.Time
	logger    *slog.Logger

	stop context.CancelFunc
	done chan struct{}
}

// pruneOnce prunes everything older than the retention while holding the
// lease, renewing it between batches. It does nothing when another node
// holds the lease.
func (p *auditPruner) pruneOnce(ctx context.Context) (audit.PruneResult, error) {
	ttl := min(max(2*p.interval, 30*time.Second), 5*time.Minute)
	l, ok, err := p.leases.AcquireLease(ctx, auditPruneLease, p.node, ttl)
	if err != nil {
		return audit.PruneResult{}, fmt.Errorf("audit prune lease: %w", err)
	}
	if !ok {
		return audit.PruneResult{}, nil
	}
	defer func() {
		if err := p.leases.ReleaseLease(context.WithoutCancel(ctx), l); err != nil {
			p.logger.DebugContext(ctx, "audit prune lease was lost", "err", err)
		}
	}()
	before := p.now().Add(-p.retention)
	return p.log.Prune(ctx, before, p.batch, func(ctx context.Context) error {
		if err := p.leases.RenewLease(ctx, l, ttl); err != nil {
			return fmt.Errorf("audit prune lease: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(auditPrunePause):
			return nil
		}
	})
}

func (p *auditPruner) loop(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := p.pruneOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.logger.WarnContext(ctx, "audit prune failed; retrying next interval", "err", err)
		case res.Pruned > 0:
			p.logger.InfoContext(ctx, "pruned audit records older than the retention", "records", res.Pruned,
				"checkpoint_seq", res.Checkpoint.Seq, "pruned_total", res.Checkpoint.Pruned)
		}
	}
}

// startAuditPrune starts pruning every audit_prune_interval, unless the
// retention is 0 (keep forever).
func (a *App) startAuditPrune() {
	if a.cfg.AuditRetention <= 0 {
		return
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "floe"
	}
	p := &auditPruner{log: a.audit, leases: a.store, retention: a.cfg.AuditRetention, interval: a.cfg.AuditPruneInterval,
		batch: a.cfg.AuditPruneBatch, node: fmt.Sprintf("%s-%08x", host, rand.Uint32()), now: time.Now, logger: a.log,
		done: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	a.auditPrune = p
	go p.loop(ctx)
}

// stopAuditPrune stops the background pruning and waits for it to end.
func (a *App) stopAuditPrune() error {
	if a.auditPrune == nil {
		return nil
	}
	a.auditPrune.stop()
	<-a.auditPrune.done
	a.auditPrune = nil
	return nil
}

// PruneAudit prunes the audit records older than the retention now (also
// when the background pruning is off, with the configured retention; a
// retention of 0 prunes nothing).
func (a *App) PruneAudit(ctx context.Context) (audit.PruneResult, error) {
	if a.cfg.AuditRetention <= 0 {
		return audit.PruneResult{}, nil
	}
	return a.audit.Prune(ctx, time.Now().Add(-a.cfg.AuditRetention), a.cfg.AuditPruneBatch, nil)
}
