package audit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/floe-lake/floe/audit"
)

// allRecords is the store's side: every record of the chain, and how many
// reads reached it.
type allRecords struct {
	recs  []audit.Record // recs[i].Seq == i+1
	reads int
}

func (s *allRecords) AuditRecords(_ context.Context, after int64, limit int) ([]audit.Record, error) {
	s.reads++
	out := []audit.Record{}
	for _, r := range s.recs {
		if r.Seq > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func rec(seq int64) audit.Record {
	return audit.Record{Seq: seq, Time: time.Unix(seq, 0).UTC(), Action: "catalog.loadTable", Outcome: "success",
		Detail: []byte(fmt.Sprintf(`{"n":%d}`, seq)), Hash: fmt.Sprintf("h%d", seq)}
}

// chain returns a store holding records 1..n, and the subsets of them that
// are "this node's" (ours) for a tail to be given.
func chain(n int, ours func(seq int64) bool) (*allRecords, []audit.Record) {
	s := &allRecords{}
	var mine []audit.Record
	for i := int64(1); i <= int64(n); i++ {
		s.recs = append(s.recs, rec(i))
		if ours(i) {
			mine = append(mine, rec(i))
		}
	}
	return s, mine
}

func TestTailAnswersAsTheStore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ours      func(int64) bool
		after     int64
		limit     int
		wantReads int // reads that reached the store
	}{
		{"inside", func(int64) bool { return true }, 10, 20, 0},
		{"to the end", func(int64) bool { return true }, 190, 20, 1},
		{"past the end", func(int64) bool { return true }, 200, 20, 1},
		{"before the tail", func(s int64) bool { return s > 100 }, 10, 20, 1},
		{"over another node's record", func(s int64) bool { return s != 51 }, 45, 10, 1},
		{"another node's record first", func(s int64) bool { return s != 51 }, 50, 10, 1},
		{"every other record another node's", func(s int64) bool { return s%2 == 0 }, 9, 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, mine := chain(200, tc.ours)
			tail := audit.NewTail(store, 0, 0, 0)
			tail.Add(mine)
			want, _ := (&allRecords{recs: store.recs}).AuditRecords(context.Background(), tc.after, tc.limit)
			got, err := tail.AuditRecords(context.Background(), tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("tail answered %d records (%v...), the store %d", len(got), seqs(got), len(want))
			}
			if store.reads != tc.wantReads {
				t.Errorf("%d reads reached the store, want %d", store.reads, tc.wantReads)
			}
		})
	}
}

// TestTailRandom compares the tail with the store for random mixes of this
// node's and other nodes' records, bounds and reads.
func TestTailRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		share := rng.Float64()
		store, mine := chain(300, func(int64) bool { return rng.Float64() < share })
		tail := audit.NewTail(store, 1+rng.IntN(400), 0, 0)
		for len(mine) > 0 { // added in batches, as Log.AppendBatch does
			n := min(len(mine), 1+rng.IntN(40))
			tail.Add(mine[:n])
			mine = mine[n:]
		}
		for range 20 {
			after, limit := int64(rng.IntN(320)), 1+rng.IntN(50)
			want, _ := (&allRecords{recs: store.recs}).AuditRecords(context.Background(), after, limit)
			got, err := tail.AuditRecords(context.Background(), after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: after %d limit %d: tail %v, store %v", round, after, limit, seqs(got), seqs(want))
			}
		}
	}
}

func TestTailBounded(t *testing.T) {
	t.Run("records", func(t *testing.T) {
		store, mine := chain(5000, func(int64) bool { return true })
		tail := audit.NewTail(store, 1000, 0, 0)
		for i := 0; i < len(mine); i += 100 {
			tail.Add(mine[i : i+100])
			if n, _ := tail.Len(); n > 1000 {
				t.Fatalf("tail holds %d records, bound 1000", n)
			}
		}
		if n, _ := tail.Len(); n != 1000 {
			t.Fatalf("tail holds %d records after 5,000, want its bound 1000", n)
		}
		got, err := tail.AuditRecords(context.Background(), 4500, 10) // the newest are held
		if err != nil || len(got) != 10 || got[0].Seq != 4501 || store.reads != 0 {
			t.Fatalf("got %v, %v after %d store reads", seqs(got), err, store.reads)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		store, mine := chain(5000, func(int64) bool { return true })
		const bound = 64 << 10
		tail := audit.NewTail(store, 0, bound, 0)
		for i := 0; i < len(mine); i += 50 {
			tail.Add(mine[i : i+50])
			if _, b := tail.Len(); b > bound {
				t.Fatalf("tail holds %d bytes, bound %d", b, bound)
			}
		}
		if n, _ := tail.Len(); n == 0 || n >= 5000 {
			t.Fatalf("tail holds %d records under a %d-byte bound", n, bound)
		}
	})
}

func TestTailReadyAndRestart(t *testing.T) {
	store, mine := chain(100, func(int64) bool { return true })
	tail := audit.NewTail(store, 0, 0, 30)
	tail.Add(mine[:20])
	select {
	case <-tail.Ready():
		t.Fatal("ready after 20 records, wake at 30")
	default:
	}
	tail.Add(mine[20:40])
	select {
	case <-tail.Ready():
	default:
		t.Fatal("not ready after 40 records, wake at 30")
	}
	// Records that do not follow the held ones (a restore of an older
	// store, say) start the tail anew rather than mixing two histories.
	tail.Add(mine[5:10])
	if n, _ := tail.Len(); n != 5 {
		t.Fatalf("tail holds %d records after a restart with 5", n)
	}
}

func seqs(rs []audit.Record) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}

// TestTailLetsGoOfWhatWasRead: once the export has read past records, the
// tail no longer holds them (a tail that kept them until its bounds pushed
// them out grew for an hour of ordinary load, the soak's whole run).
func TestTailLetsGoOfWhatWasRead(t *testing.T) {
	store, mine := chain(3000, func(int64) bool { return true })
	tail := audit.NewTail(store, 0, 0, 0)
	tail.Add(mine[:2000])
	got, err := tail.AuditRecords(context.Background(), 1500, 100)
	if err != nil || len(got) != 100 || got[0].Seq != 1501 {
		t.Fatalf("got %v, %v", seqs(got), err)
	}
	if n, b := tail.Len(); n != 500 || b <= 0 {
		t.Fatalf("tail holds %d records (%d bytes) after a read after 1500 of 2000, want 500", n, b)
	}
	if _, err := tail.AuditRecords(context.Background(), 2000, 100); err != nil {
		t.Fatal(err)
	}
	if n, b := tail.Len(); n != 0 || b != 0 {
		t.Fatalf("tail holds %d records, %d bytes after everything was read", n, b)
	}
	// What follows is held again, and an earlier record asked for again is
	// the store's to answer.
	tail.Add(mine[2000:])
	if n, _ := tail.Len(); n != 1000 {
		t.Fatalf("tail holds %d records after 1000 more", n)
	}
	reads := store.reads
	got, err = tail.AuditRecords(context.Background(), 10, 5)
	if err != nil || len(got) != 5 || got[0].Seq != 11 || store.reads != reads+1 {
		t.Fatalf("re-read of released records: %v, %v, store reads %d→%d", seqs(got), err, reads, store.reads)
	}
}

// TestTailAppendAuditRecords: AppendAuditRecords appends what AuditRecords
// answers after what dst holds (random mixes of this node's and other
// nodes' records), and takes records the tail holds into a buffer with room
// without allocating.
func TestTailAppendAuditRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sentinel := rec(999_999)
	for round := range 200 {
		share := rng.Float64()
		store, mine := chain(300, func(int64) bool { return rng.Float64() < share })
		tail := audit.NewTail(store, 1+rng.IntN(400), 0, 0)
		tail.Add(mine)
		buf := make([]audit.Record, 1, 64)
		for range 20 {
			buf[0] = sentinel
			after, limit := int64(rng.IntN(320)), 1+rng.IntN(50)
			want, _ := (&allRecords{recs: store.recs}).AuditRecords(context.Background(), after, limit)
			got, err := tail.AppendAuditRecords(context.Background(), buf[:1], after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[0], sentinel) || !reflect.DeepEqual(got[1:], want) && len(want)+len(got[1:]) > 0 {
				t.Fatalf("round %d: after %d limit %d: appended %v after %d, want %v", round, after, limit, seqs(got[1:]), got[0].Seq, seqs(want))
			}
		}
	}
	store, mine := chain(5000, func(int64) bool { return true })
	tail := audit.NewTail(store, 0, 0, 0)
	tail.Add(mine)
	buf := make([]audit.Record, 0, 1000)
	after := int64(0)
	allocs := testing.AllocsPerRun(4, func() {
		rs, err := tail.AppendAuditRecords(context.Background(), buf[:0], after, 1000)
		if err != nil || len(rs) != 1000 || rs[0].Seq != after+1 {
			t.Fatalf("after %d: %d records, %v", after, len(rs), err)
		}
		after += 1000
	})
	if allocs != 0 {
		t.Errorf("AppendAuditRecords into a buffer with room: %.0f allocations per call, want 0", allocs)
	}
}
