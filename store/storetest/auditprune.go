package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
)

// testAuditPrune checks PruneAudit and AuditCheckpoint: a prune deletes
// exactly the records after the previous checkpoint up to the new one and
// stores the checkpoint in the same transaction; a stale previous
// checkpoint or a hash that does not match the record is a Conflict that
// changes nothing; a re-signing (same seq) only replaces the checkpoint;
// an oversized batch is Invalid.
func testAuditPrune(t *testing.T, e *env) {
	_, ok, err := e.s.AuditCheckpoint(e.ctx)
	must(t, err)
	if ok {
		t.Fatal("a fresh store has a checkpoint")
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	must(t, e.s.AppendAuditBatch(e.ctx, func(prevSeq int64, prevHash string) ([]audit.Record, error) {
		var rs []audit.Record
		for i := range 10 {
			seq := prevSeq + int64(i) + 1
			rs = append(rs, audit.Record{Seq: seq, Time: t0.Add(time.Duration(i) * time.Minute), RequestID: "r", Action: "a",
				Outcome: "success", Detail: []byte(`{}`), PrevHash: prevHash, Hash: fmt.Sprintf("h%d", seq)})
			prevHash = rs[i].Hash
		}
		return rs, nil
	}))
	cp := func(seq int64, kid string) audit.SignedCheckpoint {
		return audit.SignedCheckpoint{Seq: seq, Body: []byte(fmt.Sprintf(`{"seq":%d}`, seq)), KeyID: kid, Signature: []byte{0, 1, 2, 0xff}}
	}
	count := func() int64 {
		t.Helper()
		n, err := e.s.AuditCount(e.ctx)
		must(t, err)
		return n
	}
	n, err := e.s.PruneAudit(e.ctx, 0, "h4", cp(4, "k1"))
	must(t, err)
	if n != 4 || count() != 6 {
		t.Fatalf("pruned %d, %d left; want 4, 6", n, count())
	}
	got, ok, err := e.s.AuditCheckpoint(e.ctx)
	must(t, err)
	if !ok || got.Seq != 4 || string(got.Body) != `{"seq":4}` || got.KeyID != "k1" || string(got.Signature) != "\x00\x01\x02\xff" {
		t.Fatalf("checkpoint %+v", got)
	}
	rs, err := e.s.AuditRecords(e.ctx, 0, 100)
	must(t, err)
	if len(rs) != 6 || rs[0].Seq != 5 {
		t.Fatalf("records after prune start at %v", rs)
	}
	// Another node pruned first: the previous checkpoint is stale.
	_, err = e.s.PruneAudit(e.ctx, 0, "h6", cp(6, "k1"))
	wantErr(t, err, floe.Conflict, "audit", "")
	// The hash does not match the record the checkpoint names.
	_, err = e.s.PruneAudit(e.ctx, 4, "h7", cp(6, "k1"))
	wantErr(t, err, floe.Conflict, "audit", "")
	// A record that does not exist.
	_, err = e.s.PruneAudit(e.ctx, 4, "h99", cp(99, "k1"))
	wantErr(t, err, floe.Conflict, "audit", "")
	if count() != 6 {
		t.Fatalf("%d records after refused prunes, want 6", count())
	}
	// A re-signing replaces only the checkpoint.
	n, err = e.s.PruneAudit(e.ctx, 4, "h4", cp(4, "k2"))
	must(t, err)
	got, _, err = e.s.AuditCheckpoint(e.ctx)
	must(t, err)
	if n != 0 || count() != 6 || got.KeyID != "k2" {
		t.Fatalf("re-sign: pruned %d, %d left, key %q", n, count(), got.KeyID)
	}
	// Going backwards or beyond the batch bound is refused.
	_, err = e.s.PruneAudit(e.ctx, 4, "h3", cp(3, "k1"))
	wantErr(t, err, floe.Invalid, "audit", "")
	_, err = e.s.PruneAudit(e.ctx, 4, "h", cp(4+audit.MaxPruneBatch+1, "k1"))
	wantErr(t, err, floe.Invalid, "audit", "")
	// Pruning up to the head leaves no record; appends continue the chain.
	n, err = e.s.PruneAudit(e.ctx, 4, "h10", cp(10, "k2"))
	must(t, err)
	if n != 6 || count() != 0 {
		t.Fatalf("pruned %d, %d left; want 6, 0", n, count())
	}
	seq, hash, err := e.s.AuditHead(e.ctx)
	must(t, err)
	if seq != 10 || hash != "h10" {
		t.Fatalf("head after pruning all = %d, %q", seq, hash)
	}
}
