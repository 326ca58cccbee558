package audit

import (
	"context"
	"sort"
	"sync"
)

// Records reads stored records: Store.AuditRecords.
type Records interface {
	// AuditRecords returns up to limit records with Seq > after, in Seq order.
	AuditRecords(ctx context.Context, after int64, limit int) ([]Record, error)
}

// Default bounds of a Tail.
const (
	DefaultTailRecords = 50_000
	DefaultTailBytes   = 32 << 20
)

// Tail keeps, within a number of records and bytes, the records this
// process last appended (a Log with Options.Tail adds them once stored), so
// that a reader following the chain closely, the Iceberg export, takes them
// from memory instead of reading back what was just written. Its
// AuditRecords answers exactly what the store would: from memory when the
// tail holds the first record asked for, completed from the store where the
// tail has a gap (another node's records) or ends; from the store
// otherwise. Safe for concurrent use.
type Tail struct {
	src        Records
	maxRecords int
	maxBytes   int64

	mu    sync.Mutex
	recs  []Record // recs[start:] are held, in Seq order
	start int
	bytes int64
	// added counts records added since the last Drain of ready; ready is
	// signalled when it reaches wakeAt.
	added  int
	wakeAt int
	ready  chan struct{}
}

// NewTail returns a Tail over src holding at most maxRecords records and
// maxBytes bytes (as recordBytes counts them; defaults when <= 0). Ready is
// signalled whenever wakeAt records were added since it was last received
// (never when wakeAt <= 0).
func NewTail(src Records, maxRecords int, maxBytes int64, wakeAt int) *Tail {
	if maxRecords <= 0 {
		maxRecords = DefaultTailRecords
	}
	if maxBytes <= 0 {
		maxBytes = DefaultTailBytes
	}
	return &Tail{src: src, maxRecords: maxRecords, maxBytes: maxBytes, wakeAt: wakeAt, ready: make(chan struct{}, 1)}
}

// recordBytes is the memory a held record is charged.
func recordBytes(r Record) int64 { return int64(160 + r.TextBytes()) }

// Ready is signalled when enough records were added to be worth reading
// before the reader's next scheduled read (see NewTail's wakeAt).
func (t *Tail) Ready() <-chan struct{} { return t.ready }

// Len returns how many records and bytes the tail holds.
func (t *Tail) Len() (int, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.recs) - t.start, t.bytes
}

// Add appends stored records, in Seq order, after the ones held. Records
// that do not follow the last held one are a new start: the tail is
// emptied first.
func (t *Tail) Add(rs []Record) {
	if len(rs) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.recs); n > t.start && rs[0].Seq <= t.recs[n-1].Seq {
		clear(t.recs)
		t.recs, t.start, t.bytes = t.recs[:0], 0, 0
	}
	for _, r := range rs {
		t.recs = append(t.recs, r)
		t.bytes += recordBytes(r)
	}
	for len(t.recs)-t.start > t.maxRecords || (t.bytes > t.maxBytes && len(t.recs)-t.start > 0) {
		t.bytes -= recordBytes(t.recs[t.start])
		t.recs[t.start] = Record{} // let its strings go
		t.start++
	}
	t.compact()
	t.added += len(rs)
	if t.wakeAt > 0 && t.added >= t.wakeAt {
		t.added = 0
		select {
		case t.ready <- struct{}{}:
		default:
		}
	}
}

// compact moves the held records to the front of recs once most of it is
// let go.
func (t *Tail) compact() {
	if t.start > len(t.recs)/2 && t.start >= 1024 {
		n := copy(t.recs, t.recs[t.start:])
		clear(t.recs[n:])
		t.recs, t.start = t.recs[:n], 0
	}
}

// release lets go of the held records with Seq <= upTo.
func (t *Tail) release(upTo int64) {
	for t.start < len(t.recs) && t.recs[t.start].Seq <= upTo {
		t.bytes -= recordBytes(t.recs[t.start])
		t.recs[t.start] = Record{}
		t.start++
	}
	if t.start == len(t.recs) {
		t.recs, t.start = t.recs[:0], 0
		return
	}
	t.compact()
}

// AuditRecords returns up to limit records with Seq > after, in Seq order,
// as the store holds them. The tail keeps only records after the last
// `after` it was asked for: once its reader (the export) has moved on, what
// it has read is not held until the bounds push it out.
func (t *Tail) AuditRecords(ctx context.Context, after int64, limit int) ([]Record, error) {
	return t.AppendAuditRecords(ctx, nil, after, limit)
}

// AppendAuditRecords appends to dst what AuditRecords returns and returns
// the extended slice: a reader that keeps one buffer for its batches (the
// export) takes the held records with one copy and no allocation.
func (t *Tail) AppendAuditRecords(ctx context.Context, dst []Record, after int64, limit int) ([]Record, error) {
	start := len(dst)
	dst, complete := t.appendHeld(dst, after, limit)
	n := len(dst) - start
	if n == 0 {
		more, err := t.src.AuditRecords(ctx, after, limit)
		if err != nil || dst == nil {
			return more, err // AuditRecords: the store's answer as it is
		}
		return append(dst, more...), nil
	}
	if !complete && n < limit {
		more, err := t.src.AuditRecords(ctx, dst[len(dst)-1].Seq, limit-n)
		if err != nil {
			clear(dst[start:])
			return dst[:start], err
		}
		dst = append(dst, more...)
	}
	return dst, nil
}

// appendHeld appends to dst the records after `after` the tail holds
// contiguously from after+1 on (none when it does not hold after+1), at
// most limit of them; complete is true when they are all there is up to
// limit (the tail neither ends nor skips a record before limit is
// reached). Records up to after are let go first: the one reader asks for
// what follows what it has, so it never asks for them again (and if it
// did, the store would answer).
func (t *Tail) appendHeld(dst []Record, after int64, limit int) (out []Record, complete bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.release(after)
	held := t.recs[t.start:]
	i := sort.Search(len(held), func(i int) bool { return held[i].Seq > after })
	if i == len(held) || held[i].Seq != after+1 || limit <= 0 {
		return dst, false
	}
	j := i + 1
	for j < len(held) && j-i < limit && held[j].Seq == held[j-1].Seq+1 {
		j++
	}
	return append(dst, held[i:j]...), j-i == limit
}
