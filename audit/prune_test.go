package audit_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/store/sqlstore"
)

// keySigner is an audit.Signer over ECDSA keys that can be rotated and
// retired, as the auth service's signing keys are.
type keySigner struct {
	mu      sync.Mutex
	current string
	keys    map[string]*ecdsa.PrivateKey
}

func newKeySigner(t *testing.T) *keySigner {
	s := &keySigner{keys: map[string]*ecdsa.PrivateKey{}}
	s.rotate(t)
	return s
}

func (s *keySigner) rotate(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = fmt.Sprint("k", len(s.keys)+1)
	s.keys[s.current] = k
	return s.current
}

func (s *keySigner) retire(kid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, kid)
}

func (s *keySigner) SignAuditCheckpoint(_ context.Context, msg []byte) (string, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := sha256.Sum256(msg)
	sig, err := ecdsa.SignASN1(rand.Reader, s.keys[s.current], d[:])
	return s.current, sig, err
}

func (s *keySigner) VerifyAuditCheckpoint(_ context.Context, kid string, msg, sig []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[kid]
	if !ok {
		return errors.New("unknown key")
	}
	d := sha256.Sum256(msg)
	if !ecdsa.VerifyASN1(&k.PublicKey, d[:], sig) {
		return errors.New("bad signature")
	}
	return nil
}

// prunable is a log on a fresh SQLite store whose clock the test moves.
type prunable struct {
	l      *audit.Log
	db     *sql.DB
	st     *sqlstore.Store
	signer *keySigner
	now    time.Time
}

func openPrunable(t *testing.T) *prunable {
	t.Helper()
	path := filepath.Join(t.TempDir(), "floe.db")
	st, err := sqlstore.Open(context.Background(), path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := &prunable{db: db, st: st, signer: newKeySigner(t), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	p.l = audit.New(st, audit.Options{Now: func() time.Time { return p.now }, Signer: p.signer})
	return p
}

// appendAt appends n events, one a second, starting at the log's clock.
func (p *prunable) appendAt(t *testing.T, n int) {
	t.Helper()
	events := make([]audit.Event, n)
	for i := range events {
		events[i] = audit.Event{Time: p.now, RequestID: fmt.Sprint("r", i), Principal: "etl", Action: "catalog.loadTable",
			Resource: "table:floe/a.t", Outcome: audit.OutcomeSuccess, Detail: map[string]any{"i": i}}
		p.now = p.now.Add(time.Second)
	}
	if err := p.l.AppendBatch(context.Background(), events); err != nil {
		t.Fatal(err)
	}
}

func (p *prunable) count(t *testing.T) int64 {
	t.Helper()
	n, err := p.st.AuditCount(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPruneKeepsChainVerifiable: pruning deletes exactly the records older
// than the cut, in batches of at most the batch size, and verify then
// starts from the signed checkpoint and reports what was pruned.
func TestPruneKeepsChainVerifiable(t *testing.T) {
	ctx := context.Background()
	p := openPrunable(t)
	start := p.now
	p.appendAt(t, 100) // times start .. start+99s
	// Prune the records before start+45s (seq 1..45) in batches of 10.
	var batches []int64
	for {
		res, err := p.l.PruneBatch(ctx, start.Add(45*time.Second), 10)
		if err != nil {
			t.Fatal(err)
		}
		if res.Pruned > 10 {
			t.Fatalf("one batch pruned %d records, bound 10", res.Pruned)
		}
		if res.Pruned == 0 {
			break
		}
		batches = append(batches, res.Pruned)
	}
	if want := []int64{10, 10, 10, 10, 5}; fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
	if n := p.count(t); n != 55 {
		t.Fatalf("%d records kept, want 55", n)
	}
	res, err := p.l.VerifyChain(ctx)
	if err != nil {
		t.Fatalf("verify after prune: %v", err)
	}
	if res.Checkpoint == nil || res.Checkpoint.Seq != 45 || res.Checkpoint.Pruned != 45 || res.First != 46 || res.Last != 100 || res.Records != 55 {
		t.Fatalf("verify result %+v, checkpoint %+v", res, res.Checkpoint)
	}
	// Appends continue the chain after a prune; Prune runs batches to the end.
	p.appendAt(t, 10)
	calls := 0
	total, err := p.l.Prune(ctx, start.Add(80*time.Second), 7, func(context.Context) error { calls++; return nil })
	if err != nil || total.Pruned != 35 || total.Checkpoint.Seq != 80 || calls != 5 {
		t.Fatalf("Prune = %+v, %v (between called %d times)", total, err, calls)
	}
	if err := p.l.Verify(ctx); err != nil {
		t.Fatalf("verify after second prune: %v", err)
	}
	// Pruning everything leaves only the checkpoint, still verifiable.
	if _, err := p.l.Prune(ctx, p.now.Add(time.Hour), 1000, nil); err != nil {
		t.Fatal(err)
	}
	if n := p.count(t); n != 0 {
		t.Fatalf("%d records after pruning all", n)
	}
	res, err = p.l.VerifyChain(ctx)
	if err != nil || res.Checkpoint.Pruned != 110 || res.Records != 0 {
		t.Fatalf("verify of an all-pruned log: %+v, %v", res, err)
	}
	p.appendAt(t, 3)
	if err := p.l.Verify(ctx); err != nil {
		t.Fatalf("verify after appending to an all-pruned log: %v", err)
	}
}

// TestVerifyAfterPruneDetectsTampering: after a prune, a changed kept record
// is named, and a changed, re-pointed or unsigned checkpoint fails verify.
func TestVerifyAfterPruneDetectsTampering(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		want string
	}{
		{"kept record modified", "UPDATE audit_events SET principal = 'admin' WHERE seq = 25", "record 25 was modified"},
		{"first kept record modified", "UPDATE audit_events SET outcome = 'denied' WHERE seq = 21", "record 21 was modified"},
		{"first kept record deleted", "DELETE FROM audit_events WHERE seq = 21", "record 21 is missing"},
		{"first kept record relinked", "UPDATE audit_events SET prev_hash = '00' WHERE seq = 21", "record 21 does not link to the checkpoint"},
		{"checkpoint hash changed", `UPDATE audit_checkpoint SET body = replace(body, '"hash":"', '"hash":"0')`, "signature does not verify"},
		{"checkpoint moved forward", `UPDATE audit_checkpoint SET body = replace(body, '"seq":20', '"seq":22'), seq = 22`, "signature does not verify"},
		{"checkpoint signature replaced", `UPDATE audit_checkpoint SET signature = 'AAAA'`, "signature does not verify"},
		{"checkpoint key changed", `UPDATE audit_checkpoint SET key_id = 'k9'`, "signature does not verify"},
		{"checkpoint deleted", `DELETE FROM audit_checkpoint`, "record 1 is missing"},
		{"more records deleted under the checkpoint", "DELETE FROM audit_events WHERE seq <= 22", "record 21 is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p := openPrunable(t)
			start := p.now
			p.appendAt(t, 30)
			if _, err := p.l.Prune(ctx, start.Add(20*time.Second), 100, nil); err != nil {
				t.Fatal(err)
			}
			if err := p.l.Verify(ctx); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			if _, err := p.db.Exec(tt.sql); err != nil {
				t.Fatal(err)
			}
			err := p.l.Verify(ctx)
			if !errors.Is(err, audit.ErrTampered) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify = %v, want ErrTampered with %q", err, tt.want)
			}
		})
	}
}

// TestPruneRefusesTamperedRecords: pruning never erases the evidence: a
// modified record among those due stops the prune before it.
func TestPruneRefusesTamperedRecords(t *testing.T) {
	ctx := context.Background()
	p := openPrunable(t)
	start := p.now
	p.appendAt(t, 20)
	if _, err := p.db.Exec("UPDATE audit_events SET principal = 'x' WHERE seq = 7"); err != nil {
		t.Fatal(err)
	}
	_, err := p.l.Prune(ctx, start.Add(time.Hour), 100, nil)
	if !errors.Is(err, audit.ErrTampered) || !strings.Contains(err.Error(), "record 7") {
		t.Fatalf("Prune = %v, want ErrTampered naming record 7", err)
	}
	if n := p.count(t); n != 20 {
		t.Fatalf("%d records after a refused prune, want 20", n)
	}
}

// TestPruneResignsAfterKeyRotation: the checkpoint is signed again with the
// current key, so it stays verifiable when the old key is retired.
func TestPruneResignsAfterKeyRotation(t *testing.T) {
	ctx := context.Background()
	p := openPrunable(t)
	start := p.now
	p.appendAt(t, 10)
	if _, err := p.l.Prune(ctx, start.Add(5*time.Second), 100, nil); err != nil {
		t.Fatal(err)
	}
	old := p.signer.current
	p.signer.rotate(t)
	if _, err := p.l.Prune(ctx, start.Add(5*time.Second), 100, nil); err != nil { // nothing due: re-sign
		t.Fatal(err)
	}
	p.signer.retire(old)
	if err := p.l.Verify(ctx); err != nil {
		t.Fatalf("verify after the old key was retired: %v", err)
	}
	// Without a signer, a pruned log cannot be verified nor pruned.
	bare := audit.New(p.st, audit.Options{})
	if err := bare.Verify(ctx); err == nil || !strings.Contains(err.Error(), "signing key") {
		t.Fatalf("verify without a signer = %v", err)
	}
	if _, err := bare.PruneBatch(ctx, p.now, 10); err == nil {
		t.Fatal("prune without a signer succeeded")
	}
}

// TestPruneConcurrent: nodes pruning at once never lose or double-count a
// record: the checkpoint's compare-and-swap lets one win each batch.
func TestPruneConcurrent(t *testing.T) {
	ctx := context.Background()
	p := openPrunable(t)
	start := p.now
	p.appendAt(t, 200)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := p.l.Prune(ctx, start.Add(150*time.Second), 9, nil); err != nil && !strings.Contains(err.Error(), "pruned to record") {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	res, err := p.l.VerifyChain(ctx)
	if err != nil || res.Checkpoint.Pruned != 150 || res.Records != 50 {
		t.Fatalf("after concurrent prunes: %+v, %v", res, err)
	}
}
