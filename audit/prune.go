package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/floe-lake/floe"
)

// DefaultPruneBatch is how many records one prune transaction deletes at
// most when the caller does not say.
const DefaultPruneBatch = 5000

// MaxPruneBatch bounds the records one prune transaction reads and deletes.
const MaxPruneBatch = 100_000

// PruneResult says what PruneBatch did.
type PruneResult struct {
	// Pruned is how many records this call deleted.
	Pruned int64
	// Checkpoint is the newest checkpoint afterwards (zero when none).
	Checkpoint Checkpoint
	// More is true when the batch was full: more records may be due.
	More bool
}

// PruneBatch deletes the oldest records whose time is before before, at
// most batch of them (<= 0: DefaultPruneBatch; capped at MaxPruneBatch),
// in one store transaction that also stores a new checkpoint signed with
// the Log's Signer. Only a prefix of the chain is ever cut: a record older
// than before that follows a younger one stays until that one is due.
//
// The records to be pruned are checked first: they must link to the
// previous checkpoint and hash correctly, so that pruning never erases the
// evidence of tampering; a broken record stops pruning with ErrTampered.
// When nothing is due and the checkpoint was signed with a key other than
// the signer's current one, it is signed again, so that it stays
// verifiable after the old key is retired.
func (l *Log) PruneBatch(ctx context.Context, before time.Time, batch int) (PruneResult, error) {
	var res PruneResult
	cs, ok := l.store.(Checkpoints)
	if !ok {
		return res, floe.E(floe.Internal, "audit", "the audit store cannot prune")
	}
	if l.signer == nil {
		return res, floe.E(floe.Internal, "audit", "pruning the audit log needs a signing key")
	}
	if batch <= 0 {
		batch = DefaultPruneBatch
	}
	batch = min(batch, MaxPruneBatch)
	prev, has, err := cs.AuditCheckpoint(ctx)
	if err != nil {
		return res, fmt.Errorf("audit: prune: %w", err)
	}
	var pc Checkpoint
	if has {
		if pc, err = open(ctx, l.signer, prev); err != nil {
			return res, fmt.Errorf("audit: prune: %w", err)
		}
	}
	res.Checkpoint = pc
	rs, err := l.store.AuditRecords(ctx, pc.Seq, batch)
	if err != nil {
		return res, fmt.Errorf("audit: prune: %w", err)
	}
	n := 0
	seq, hash := pc.Seq, pc.Hash
	for n < len(rs) && rs[n].Time.Before(before) {
		r := rs[n]
		if r.Seq != seq+1 || r.PrevHash != hash {
			if err := l.moved(ctx, cs, pc.Seq); err != nil {
				return res, err
			}
			return res, fmt.Errorf("audit: prune: %w: record %d does not link to record %d", ErrTampered, r.Seq, seq)
		}
		if h, err := hashRecord(r); err != nil || h != r.Hash {
			return res, fmt.Errorf("audit: prune: %w: record %d was modified", ErrTampered, r.Seq)
		}
		seq, hash = r.Seq, r.Hash
		n++
	}
	if n == 0 {
		if has {
			return res, l.resign(ctx, cs, prev, pc)
		}
		return res, nil
	}
	cp := Checkpoint{Version: CheckpointVersion, Seq: seq, Hash: hash, Pruned: pc.Pruned + (seq - pc.Seq), Time: l.now()}
	sc, err := sign(ctx, l.signer, cp)
	if err != nil {
		return res, err
	}
	deleted, err := cs.PruneAudit(ctx, pc.Seq, hash, sc)
	if err != nil {
		return res, fmt.Errorf("audit: prune records %d..%d: %w", pc.Seq+1, seq, err)
	}
	res.Pruned, res.Checkpoint, res.More = deleted, cp, n == batch
	return res, nil
}

// moved returns a Conflict if the newest checkpoint is no longer at seq:
// another node pruned while this one read, so a gap after seq is its
// work, not tampering.
func (l *Log) moved(ctx context.Context, cs Checkpoints, seq int64) error {
	now, has, err := cs.AuditCheckpoint(ctx)
	if err != nil {
		return fmt.Errorf("audit: prune: %w", err)
	}
	if has && now.Seq != seq {
		return floe.E(floe.Conflict, "audit", "the audit log was pruned to record %d meanwhile, not %d", now.Seq, seq)
	}
	return nil
}

// resign stores checkpoint c again, signed with the signer's current key,
// if it was signed with another.
func (l *Log) resign(ctx context.Context, cs Checkpoints, old SignedCheckpoint, c Checkpoint) error {
	sc, err := sign(ctx, l.signer, c)
	if err != nil {
		return err
	}
	if sc.KeyID == old.KeyID {
		return nil
	}
	if _, err := cs.PruneAudit(ctx, c.Seq, c.Hash, sc); err != nil {
		return fmt.Errorf("audit: sign the checkpoint again: %w", err)
	}
	l.log.InfoContext(ctx, "audit: checkpoint signed with the current key", "seq", c.Seq, "kid", sc.KeyID)
	return nil
}

// Prune runs PruneBatch until nothing older than before is left, calling
// between (if not nil) after every full batch, e.g. to renew a lease or to
// pause so that appends are not held up. It returns the total pruned.
func (l *Log) Prune(ctx context.Context, before time.Time, batch int, between func(context.Context) error) (PruneResult, error) {
	var total PruneResult
	for {
		res, err := l.PruneBatch(ctx, before, batch)
		total.Pruned += res.Pruned
		total.Checkpoint = res.Checkpoint
		if err != nil || !res.More {
			return total, err
		}
		if between != nil {
			if err := between(ctx); err != nil {
				return total, err
			}
		}
	}
}
