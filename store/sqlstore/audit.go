package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
)

const auditColumns = "seq, time, request_id, principal, client_addr, action, resource, outcome, detail, prev_hash, hash"

// AppendAudit appends the record seal returns to the audit log. The head row
// is read with a row lock (on SQLite the single writer serializes), so
// appends from any number of nodes form one chain. seal may run more than
// once if the transaction is retried.
func (s *Store) AppendAudit(ctx context.Context, seal func(prevSeq int64, prevHash string) (audit.Record, error)) (audit.Record, error) {
	var out audit.Record
	err := s.AppendAuditBatch(ctx, func(prevSeq int64, prevHash string) ([]audit.Record, error) {
		r, err := seal(prevSeq, prevHash)
		out = r
		return []audit.Record{r}, err
	})
	if err != nil {
		return audit.Record{}, err
	}
	return out, nil
}

// AppendAuditBatch stores the records seal returns after the current head,
// and the new head, in one transaction.
func (s *Store) AppendAuditBatch(ctx context.Context, seal func(prevSeq int64, prevHash string) ([]audit.Record, error)) error {
	return s.write(ctx, "append audit events", func(c conn) error {
		var seq int64
		var hash string
		if err := c.queryRow(ctx, auditHeadForUpdate+s.d.forUpdate).Scan(&seq, &hash); err != nil {
			return err
		}
		rs, err := seal(seq, hash)
		if err != nil {
			return floe.Wrap(floe.Internal, err, "seal audit records")
		}
		sealed := len(rs) > 0
		for _, r := range rs {
			if r.Seq != seq+1 || r.PrevHash != hash || r.Hash == "" {
				return floe.E(floe.Internal, "audit", "sealed record %d does not follow record %d", r.Seq, seq)
			}
			seq, hash = r.Seq, r.Hash
		}
		// Multi-row INSERTs: one statement per up to auditInsertRows
		// records costs a fraction of one statement per record. The chunks
		// have one of a few sizes, so that their statements can be
		// prepared once.
		for len(rs) > 0 {
			n := 1
			for _, size := range auditInsertSizes {
				if len(rs) >= size {
					n = size
					break
				}
			}
			chunk := rs[:n]
			rs = rs[n:]
			args := make([]any, 0, len(chunk)*11)
			for _, r := range chunk {
				args = append(args, r.Seq, s.d.timeArg(r.Time), r.RequestID, r.Principal, r.ClientAddr, r.Action,
					r.Resource, r.Outcome, string(r.Detail), r.PrevHash, r.Hash)
			}
			if _, err := c.exec(ctx, auditInsert(len(chunk)), args...); err != nil {
				return err
			}
		}
		if !sealed {
			return nil
		}
		_, err = c.exec(ctx, auditHeadUpdate, seq, hash)
		return err
	})
}

// The statements of an append. auditHeadForUpdate is completed by the
// dialect's row lock (nothing on SQLite, where the write lock serializes).
const (
	auditHeadForUpdate = "SELECT seq, hash FROM audit_head WHERE id = 1"
	auditHeadUpdate    = "UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1"
)

// auditInsertSizes are the record counts of the INSERT statements a batch
// is split into, largest first: at most auditInsertRows records (11
// parameters each, well under SQLite's and PostgreSQL's limits), and
// always 1 last so that every count can be made of them.
var auditInsertSizes = []int{auditInsertRows, 16, 4, 1}

// auditInsertRows bounds the records of one INSERT statement.
const auditInsertRows = 64

// auditInsert returns an INSERT of n audit records.
func auditInsert(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO audit_events (" + auditColumns + ") VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	}
	return b.String()
}

// AuditRecords returns up to limit records with Seq > after, in Seq order.
func (s *Store) AuditRecords(ctx context.Context, after int64, limit int) ([]audit.Record, error) {
	if limit <= 0 {
		limit = 1000
	}
	return s.auditSelect(ctx, "audit records", limit, " WHERE seq > ? ORDER BY seq LIMIT ?", after, limit)
}

// AuditQuery returns the records q selects, oldest first (newest first
// with q.Newest), at most q.Limit of them. Action and resource prefixes
// compare bytes (the "C" collation on PostgreSQL), so both dialects agree.
func (s *Store) AuditQuery(ctx context.Context, q audit.Query) ([]audit.Record, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	var conds []string
	var args []any
	add := func(cond string, a ...any) {
		conds = append(conds, cond)
		args = append(args, a...)
	}
	// binary names a text column compared byte for byte.
	binary := func(col string) string {
		if s.d.name == DialectPostgres {
			return col + ` COLLATE "C"`
		}
		return col
	}
	prefix := func(col, p string) {
		add(binary(col)+" >= ? AND substr("+col+", 1, ?) = ?", p, utf8.RuneCountInString(p), p)
	}
	if q.Principal != "" {
		add("principal = ?", q.Principal)
	}
	if p, ok := q.ActionPrefix(); ok {
		if p != "" {
			prefix("action", p)
		}
	} else if q.Action != "" {
		add(binary("action")+" = ?", q.Action)
	}
	if q.Resource != "" {
		prefix("resource", q.Resource)
	}
	if q.Outcome != "" {
		add("outcome = ?", q.Outcome)
	}
	if q.RequestID != "" {
		add("request_id = ?", q.RequestID)
	}
	if !q.Since.IsZero() {
		add("time >= ?", s.d.timeArg(q.Since))
	}
	if !q.Until.IsZero() {
		add("time < ?", s.d.timeArg(q.Until))
	}
	if q.After > 0 {
		add("seq > ?", q.After)
	}
	if q.Before > 0 {
		add("seq < ?", q.Before)
	}
	tail := ""
	if len(conds) > 0 {
		tail = " WHERE " + strings.Join(conds, " AND ")
	}
	order := " ORDER BY seq"
	if q.Newest {
		order += " DESC"
	}
	return s.auditSelect(ctx, "audit query", min(q.Limit, 1000), tail+order+" LIMIT ?", append(args, q.Limit)...)
}

// auditSelect reads the records of "SELECT <columns> FROM audit_events" + tail.
func (s *Store) auditSelect(ctx context.Context, op string, capHint int, tail string, args ...any) ([]audit.Record, error) {
	rows, err := s.read().query(ctx, "SELECT "+auditColumns+" FROM audit_events"+tail, args...)
	if err != nil {
		return nil, s.fail(op, err)
	}
	defer rows.Close()
	out := make([]audit.Record, 0, max(capHint, 0))
	for rows.Next() {
		var r audit.Record
		var at dbTime
		if err := rows.Scan(&r.Seq, &at, &r.RequestID, &r.Principal, &r.ClientAddr, &r.Action, &r.Resource, &r.Outcome,
			&r.Detail, &r.PrevHash, &r.Hash); err != nil {
			return nil, s.fail(op, err)
		}
		r.Time = at.t
		if r.Detail == nil {
			r.Detail = []byte{}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(op, err)
	}
	return out, nil
}

// AuditHead returns the seq and hash of the last appended record.
func (s *Store) AuditHead(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	if err := s.read().queryRow(ctx, "SELECT seq, hash FROM audit_head WHERE id = 1").Scan(&seq, &hash); err != nil {
		return 0, "", s.fail("audit head", err)
	}
	return seq, hash, nil
}

var _ audit.Checkpoints = (*Store)(nil)

// AuditCheckpoint returns the newest checkpoint of the audit chain; ok is
// false when the log was never pruned.
func (s *Store) AuditCheckpoint(ctx context.Context) (audit.SignedCheckpoint, bool, error) {
	var cp audit.SignedCheckpoint
	var body, sig string
	err := s.read().queryRow(ctx, "SELECT seq, body, key_id, signature FROM audit_checkpoint WHERE id = 1").
		Scan(&cp.Seq, &body, &cp.KeyID, &sig)
	if errors.Is(err, sql.ErrNoRows) {
		return audit.SignedCheckpoint{}, false, nil
	}
	if err != nil {
		return audit.SignedCheckpoint{}, false, s.fail("audit checkpoint", err)
	}
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		// Stored as read: Verify reports a signature that does not verify.
		b = []byte(sig)
	}
	cp.Body, cp.Signature = []byte(body), b
	return cp, true, nil
}

// PruneAudit deletes the audit records with prevSeq < seq <= cp.Seq and
// stores cp as the newest checkpoint, in one transaction, provided the
// newest checkpoint is still at prevSeq and record cp.Seq has hash
// lastHash; otherwise it answers Conflict and changes nothing. The caller
// bounds cp.Seq - prevSeq (audit.MaxPruneBatch), so one transaction holds
// the write lock briefly.
func (s *Store) PruneAudit(ctx context.Context, prevSeq int64, lastHash string, cp audit.SignedCheckpoint) (int64, error) {
	if cp.Seq < prevSeq || cp.Seq-prevSeq > audit.MaxPruneBatch {
		return 0, floe.E(floe.Invalid, "audit", "cannot prune records %d..%d in one batch", prevSeq+1, cp.Seq)
	}
	var deleted int64
	err := s.write(ctx, "prune audit events", func(c conn) error {
		var at int64
		err := c.queryRow(ctx, "SELECT seq FROM audit_checkpoint WHERE id = 1"+s.d.forUpdate).Scan(&at)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			at = 0
		case err != nil:
			return err
		}
		if at != prevSeq {
			return floe.E(floe.Conflict, "audit", "the audit log was pruned to record %d meanwhile, not %d", at, prevSeq)
		}
		if cp.Seq > prevSeq {
			var hash string
			err := c.queryRow(ctx, "SELECT hash FROM audit_events WHERE seq = ?", cp.Seq).Scan(&hash)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && hash != lastHash) {
				return floe.E(floe.Conflict, "audit", "audit record %d is not the one the checkpoint names", cp.Seq)
			}
			if err != nil {
				return err
			}
			if deleted, err = c.exec(ctx, "DELETE FROM audit_events WHERE seq > ? AND seq <= ?", prevSeq, cp.Seq); err != nil {
				return err
			}
		}
		_, err = c.exec(ctx, `INSERT INTO audit_checkpoint (id, seq, body, key_id, signature) VALUES (1, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, body = excluded.body, key_id = excluded.key_id,
				signature = excluded.signature`,
			cp.Seq, string(cp.Body), cp.KeyID, base64.StdEncoding.EncodeToString(cp.Signature))
		return err
	})
	if err != nil {
		return 0, err
	}
	return deleted, nil
}

// AuditCount returns how many audit records the store holds.
func (s *Store) AuditCount(ctx context.Context) (int64, error) {
	var n int64
	if err := s.read().queryRow(ctx, "SELECT count(*) FROM audit_events").Scan(&n); err != nil {
		return 0, s.fail("audit count", err)
	}
	return n, nil
}
