package audit_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
)

// memSeals is an in-memory warehouse with S3's create-only semantics.
type memSeals struct {
	mu      sync.Mutex
	objs    map[string][]byte
	retired []string
}

func newMemSeals() *memSeals { return &memSeals{objs: map[string][]byte{}} }

func (m *memSeals) CreateSeal(_ context.Context, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[name]; ok {
		return floe.E(floe.Conflict, "", "exists")
	}
	m.objs[name] = slices.Clone(data)
	return nil
}

func (m *memSeals) ListSeals(_ context.Context, after string, limit int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for n := range m.objs {
		if n > after {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names[:min(limit, len(names))], nil
}

func (m *memSeals) ReadSeal(_ context.Context, name string, limit int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[name]
	if !ok {
		return nil, floe.E(floe.NotFound, "", "no %s", name)
	}
	if int64(len(b)) > limit {
		return nil, floe.E(floe.Invalid, "", "too large")
	}
	return slices.Clone(b), nil
}

func (m *memSeals) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.objs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// sealed is a prunable log with a warehouse of seals.
type sealed struct {
	*prunable
	objs   *memSeals
	sealer *audit.Sealer
}

func openSealed(t *testing.T) *sealed {
	p := openPrunable(t)
	objs := newMemSeals()
	return &sealed{prunable: p, objs: objs, sealer: p.l.NewSealer(objs, "node-a")}
}

func (s *sealed) seal(t *testing.T) audit.SealResult {
	t.Helper()
	res, err := s.sealer.Seal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rewrite changes record seq's principal and recomputes every later hash
// and the head, as an attacker with the store (not the keys, not the
// warehouse) can.
func (s *sealed) rewrite(t *testing.T, seq int64) {
	t.Helper()
	rs, err := s.st.AuditRecords(context.Background(), seq-1, 100000)
	if err != nil || rs[0].Seq != seq {
		t.Fatal(err)
	}
	rs[0].Principal = "mallory"
	prev := rs[0].PrevHash
	for _, r := range rs {
		r.PrevHash = prev
		if r.Hash, err = audit.HashRecord(r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.Exec(`UPDATE audit_events SET principal = ?, prev_hash = ?, hash = ? WHERE seq = ?`, r.Principal, r.PrevHash, r.Hash, r.Seq); err != nil {
			t.Fatal(err)
		}
		prev = r.Hash
	}
	if _, err := s.db.Exec(`UPDATE audit_head SET hash = ? WHERE id = 1`, prev); err != nil {
		t.Fatal(err)
	}
	if err := s.l.Verify(context.Background()); err != nil {
		t.Fatalf("the rewrite is not consistent: %v", err)
	}
}

// forge writes a seal of the current head signed with a key the server
// does not know, as someone who can write the warehouse but not read the
// keys can.
func (s *sealed) forge(t *testing.T) string {
	t.Helper()
	seq, hash, err := s.st.AuditHead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"v": 1, "seq": seq, "hash": hash, "time": s.now, "prev_seq": 0, "prev": "", "node": "evil"})
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d := sha256.Sum256(append([]byte("floe-audit-seal/v1\n"), body...))
	sig, _ := ecdsa.SignASN1(rand.Reader, k, d[:])
	data, _ := json.Marshal(map[string]any{"seal": json.RawMessage(body), "kid": "k1", "sig": sig})
	name := fmt.Sprintf("%020d.json", seq)
	if err := s.objs.CreateSeal(context.Background(), name, data); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestSealsProveHistory: seals are written only when the head moved; the
// verify proves the history up to the newest seal and names the records
// after it as not yet checkpointed.
func TestSealsProveHistory(t *testing.T) {
	s := openSealed(t)
	ctx := context.Background()
	if res := s.seal(t); res.Written {
		t.Fatal("sealed an empty log")
	}
	s.appendAt(t, 10)
	if res := s.seal(t); !res.Written || res.Seal.Seq != 10 {
		t.Fatalf("first seal: %+v", res)
	}
	if res := s.seal(t); res.Written {
		t.Fatal("sealed an unchanged head again")
	}
	s.appendAt(t, 10)
	if res := s.seal(t); !res.Written || res.Seal.Seq != 20 || res.Seal.PrevSeq != 10 || res.Seal.Prev == "" {
		t.Fatalf("second seal: %+v", res)
	}
	s.appendAt(t, 5)
	res, rep, err := s.l.VerifySeals(ctx, s.objs)
	if err != nil || res.Last != 25 || rep.Seals != 2 || rep.Trusted != 2 || rep.Proven != 20 || rep.Unsealed != 21 || len(rep.Ignored) != 0 {
		t.Fatalf("verify: %+v %+v %v", res, rep, err)
	}
}

// TestSealsRefuseAttacks: every way of rewriting the history that the
// store alone allows is caught, and the error says from where on the
// history is not proven.
func TestSealsRefuseAttacks(t *testing.T) {
	tests := []struct {
		name   string
		attack func(t *testing.T, s *sealed)
		want   []string
	}{
		{"rewrite a record, every later hash and the head", func(t *testing.T, s *sealed) { s.rewrite(t, 15) },
			[]string{"record 20's hash disagrees", "proven up to record 10 ", "not proven from record 11 "}},
		{"rewrite the newest records", func(t *testing.T, s *sealed) { s.rewrite(t, 20) },
			[]string{"record 20's hash disagrees", "proven up to record 10 "}},
		{"delete the newest records and move the head back", func(t *testing.T, s *sealed) { s.rewind(t, 17) }, []string{"seals record 20, but the store ends at record 17", "proven up to record 10 "}},
		{"delete a seal from the warehouse", func(t *testing.T, s *sealed) {
			s.objs.mu.Lock()
			delete(s.objs.objs, fmt.Sprintf("%020d.json", 10))
			s.objs.mu.Unlock()
		}, []string{"checkpoint of record 10 is missing"}},
		{"rewrite the store and forge a seal of the new head", func(t *testing.T, s *sealed) {
			s.rewrite(t, 15)
			s.appendAt(t, 1)
			s.forge(t)
		}, []string{"record 20's hash disagrees", "not proven from record 11 "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openSealed(t)
			ctx := context.Background()
			s.appendAt(t, 10)
			s.seal(t)
			s.appendAt(t, 10)
			s.seal(t)
			if _, _, err := s.l.VerifySeals(ctx, s.objs); err != nil {
				t.Fatalf("before the attack: %v", err)
			}
			tt.attack(t, s)
			_, _, err := s.l.VerifySeals(ctx, s.objs)
			if !errors.Is(err, audit.ErrTampered) {
				t.Fatalf("after the attack: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error()+" ", w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestSealForgedIgnored: a seal signed with a key the server does not know
// proves nothing and is reported, but does not fail an intact log.
func TestSealForgedIgnored(t *testing.T) {
	s := openSealed(t)
	s.appendAt(t, 5)
	s.seal(t)
	s.appendAt(t, 5)
	name := s.forge(t)
	_, rep, err := s.l.VerifySeals(context.Background(), s.objs)
	if err != nil || rep.Seals != 2 || rep.Trusted != 1 || rep.Proven != 5 || len(rep.Ignored) != 1 || !strings.HasPrefix(rep.Ignored[0], name) {
		t.Fatalf("verify with a forged seal: %+v, %v", rep, err)
	}
	// An oversized or unreadable object under the prefix is ignored too.
	if err := s.objs.CreateSeal(context.Background(), fmt.Sprintf("%020d.json", 99), []byte(strings.Repeat("x", 128<<10))); err != nil {
		t.Fatal(err)
	}
	if err := s.objs.CreateSeal(context.Background(), "notes.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	_, rep, err = s.l.VerifySeals(context.Background(), s.objs)
	if err != nil || len(rep.Ignored) != 3 || rep.Proven != 5 {
		t.Fatalf("verify with junk: %+v, %v", rep, err)
	}
}

// TestSealRetiredKey: a seal whose signing key was retired is still proven
// by the link from a newer seal signed with the current key.
func TestSealRetiredKey(t *testing.T) {
	s := openSealed(t)
	s.appendAt(t, 5)
	s.seal(t)
	old := s.signer.current
	s.signer.rotate(t)
	s.appendAt(t, 5)
	s.seal(t)
	s.signer.retire(old)
	_, rep, err := s.l.VerifySeals(context.Background(), s.objs)
	if err != nil || rep.Trusted != 2 || len(rep.Ignored) != 0 || rep.Proven != 10 {
		t.Fatalf("verify after retiring the first seal's key: %+v, %v", rep, err)
	}
	s.rewrite(t, 3)
	if _, _, err := s.l.VerifySeals(context.Background(), s.objs); err == nil || !strings.Contains(err.Error(), "record 5's hash disagrees") {
		t.Fatalf("a rewrite under the retired key's seal: %v", err)
	}
}

// TestSealConcurrentNodes: several nodes sealing the same log at once never
// fail on each other (one wins each seq, the others move on), and every
// seal they write is proven.
func TestSealConcurrentNodes(t *testing.T) {
	s := openSealed(t)
	ctx := context.Background()
	sealers := []*audit.Sealer{s.sealer}
	for i := range 3 {
		sealers = append(sealers, s.l.NewSealer(s.objs, fmt.Sprint("node-", i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for round := range 5 {
		s.appendAt(t, 3)
		for _, sl := range sealers {
			wg.Go(func() {
				if _, err := sl.Seal(ctx); err != nil {
					errs <- fmt.Errorf("round %d: %w", round, err)
				}
			})
		}
		wg.Wait()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, rep, err := s.l.VerifySeals(ctx, s.objs)
	if err != nil || rep.Seals != 5 || rep.Trusted != 5 || rep.Proven != 15 {
		t.Fatalf("verify: %+v %v (seals %v)", rep, err, s.objs.names())
	}
}
