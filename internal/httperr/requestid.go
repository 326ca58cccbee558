package httperr

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"sync/atomic"
	"time"
)

// RequestIDs makes the ids of requests that bring none: 16 hex digits, the
// first 10 the time in Unix milliseconds (modulo 2^40) and the last 6 a
// counter that starts at a random value. Ids sort by the millisecond they
// were made in, so that the audit log's index on request ids grows at its
// end, like its other indexes, instead of taking each insert at a random
// place (one more page written per event). The counter makes the ids of
// one server distinct; those of different servers collide only if made in
// the same millisecond with the same counter value.
type RequestIDs struct {
	now func() time.Time
	n   atomic.Uint32
}

// NewRequestIDs returns a generator reading the time from now.
func NewRequestIDs(now func() time.Time) *RequestIDs {
	ids := &RequestIDs{now: now}
	var seed [4]byte
	_, _ = rand.Read(seed[:])
	ids.n.Store(binary.BigEndian.Uint32(seed[:]))
	return ids
}

// Next returns a new id.
func (ids *RequestIDs) Next() string {
	v := uint64(ids.now().UnixMilli())<<24 | uint64(ids.n.Add(1)&(1<<24-1))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return hex.EncodeToString(b[:])
}

// Of returns the request's id: its X-Request-Id header when present and
// at most 128 bytes, else a new one from Next. It echoes the id in w's
// X-Request-Id header.
func (ids *RequestIDs) Of(w http.ResponseWriter, r *http.Request) string {
	rid := r.Header.Get("X-Request-Id")
	if rid == "" || len(rid) > maxRequestIDBytes {
		rid = ids.Next()
	}
	w.Header().Set("X-Request-Id", rid)
	return rid
}

// maxRequestIDBytes bounds the X-Request-Id a client may choose.
const maxRequestIDBytes = 128
