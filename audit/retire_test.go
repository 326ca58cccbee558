package audit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/floe-lake/floe/audit"
)

// RetireSeal moves a seal into a "retired/<dir>/" name the listing skips.
func (m *memSeals) RetireSeal(_ context.Context, name, dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[name]; !ok {
		return nil
	}
	m.retired = append(m.retired, dir+"/"+name)
	delete(m.objs, name)
	return nil
}

// rewind deletes the records after seq and moves the head back to it:
// what a restore of a backup taken at seq does to the store, and what an
// attacker with the store can do.
func (s *sealed) rewind(t *testing.T, seq int64) {
	t.Helper()
	if _, err := s.db.Exec(`DELETE FROM audit_events WHERE seq > ?`, seq); err != nil {
		t.Fatal(err)
	}
	var h string
	if err := s.db.QueryRow(`SELECT hash FROM audit_events WHERE seq = ?`, seq).Scan(&h); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1`, seq, h); err != nil {
		t.Fatal(err)
	}
}

// TestRetireSealsAfterRestore: after a restore rewinds the store to record
// 17, the seals of records 20 and 30 (written after the backup) are moved
// aside, verification passes again without any manual step, a new sealer
// seals the records that now take seqs 18.. and links to the seal of 10,
// and the seals at or before the restored head are never touched.
func TestRetireSealsAfterRestore(t *testing.T) {
	s := openSealed(t)
	ctx := context.Background()
	for range 3 {
		s.appendAt(t, 10)
		s.seal(t)
	}
	s.rewind(t, 17)
	if _, _, err := s.l.VerifySeals(ctx, s.objs); err == nil || !strings.Contains(err.Error(), "records were deleted") {
		t.Fatalf("before retiring, verify = %v; want the lost records reported", err)
	}
	res, err := audit.RetireSealsAfter(ctx, s.objs, 17, "restore-1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 2 || res.First != 20 || res.Last != 30 {
		t.Fatalf("retired %+v, want the seals of 20 and 30", res)
	}
	if got := s.objs.names(); !slices.Equal(got, []string{fmt.Sprintf("%020d.json", 10)}) {
		t.Fatalf("seals left: %v", got)
	}
	if !slices.Equal(s.objs.retired, []string{"restore-1/" + fmt.Sprintf("%020d.json", 20), "restore-1/" + fmt.Sprintf("%020d.json", 30)}) {
		t.Fatalf("retired: %v", s.objs.retired)
	}
	if _, _, err := s.l.VerifySeals(ctx, s.objs); err != nil {
		t.Fatalf("after retiring: %v", err)
	}
	// New records take seqs 18..; a fresh sealer (a node started on the
	// restored store) seals them, after the seal of 10.
	s.appendAt(t, 10)
	res2, err := s.l.NewSealer(s.objs, "node-b").Seal(ctx)
	if err != nil || !res2.Written || res2.Seal.Seq != 27 || res2.Seal.PrevSeq != 10 {
		t.Fatalf("seal after the restore: %+v, %v", res2, err)
	}
	if _, rep, err := s.l.VerifySeals(ctx, s.objs); err != nil || rep.Proven != 27 {
		t.Fatalf("verify after the restore: %+v, %v", rep, err)
	}
	// Retiring again finds nothing after the head.
	if again, err := audit.RetireSealsAfter(ctx, s.objs, 27, "restore-2"); err != nil || again.Count != 0 {
		t.Fatalf("second retire: %+v, %v", again, err)
	}
}

// TestRetireSealsDoesNotHideTampering: a rewrite of records at or before
// the restored head is still caught after the retirement, since only the
// seals after the head move.
func TestRetireSealsDoesNotHideTampering(t *testing.T) {
	s := openSealed(t)
	ctx := context.Background()
	s.appendAt(t, 10)
	s.seal(t)
	s.appendAt(t, 10)
	s.seal(t)
	s.rewrite(t, 5)
	s.rewind(t, 15)
	if _, err := audit.RetireSealsAfter(ctx, s.objs, 15, "r"); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.l.VerifySeals(ctx, s.objs)
	if err == nil || !strings.Contains(err.Error(), "record 10's hash disagrees") {
		t.Fatalf("verify = %v; want the rewrite of record 5 caught by the seal of 10", err)
	}
	if !errors.Is(err, audit.ErrTampered) {
		t.Fatalf("verify = %v; want ErrTampered", err)
	}
}
