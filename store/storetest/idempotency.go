package storetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/floe-lake/floe"
)

func (e *env) wantCached(t *testing.T, key string, status int, header string, body []byte) {
	t.Helper()
	gs, gh, gb, ok, err := e.s.LoadIdempotent(e.ctx, key)
	must(t, err)
	if !ok || gs != status || gh != header || !bytes.Equal(gb, body) {
		t.Fatalf("LoadIdempotent(%q) = %d, %q, %q, %v; want %d, %q, %q, true", key, gs, gh, gb, ok, status, header, body)
	}
}

func (e *env) wantAbsent(t *testing.T, key string) {
	t.Helper()
	_, _, _, ok, err := e.s.LoadIdempotent(e.ctx, key)
	must(t, err)
	if ok {
		t.Fatalf("LoadIdempotent(%q) found a response, want none", key)
	}
}

func testIdempotency(t *testing.T, e *env) {
	e.wantAbsent(t, "k1")
	hdr := `{"Content-Type":["application/json"],"Etag":["\"abc\""]}`
	body := []byte("{\"metadata-location\":\"s3://b/m.json\"}\x00\xff")
	must(t, e.s.SaveIdempotent(e.ctx, "k1", 200, hdr, body))
	e.wantCached(t, "k1", 200, hdr, body)

	// First writer wins.
	must(t, e.s.SaveIdempotent(e.ctx, "k1", 409, "", []byte("second")))
	e.wantCached(t, "k1", 200, hdr, body)

	// Empty and nil bodies come back empty.
	must(t, e.s.SaveIdempotent(e.ctx, "k2", 204, "", nil))
	e.wantCached(t, "k2", 204, "", []byte{})
	e.wantAbsent(t, "K1")

	wantErr(t, e.s.SaveIdempotent(e.ctx, "", 200, "", nil), floe.Invalid, "", "")
}

func testIdempotencyExpiry(t *testing.T, e *env) {
	must(t, e.s.SaveIdempotent(e.ctx, "old", 201, "h1", []byte("b1")))
	e.clock.Advance(IdempotencyLifetime / 2)
	must(t, e.s.SaveIdempotent(e.ctx, "young", 202, "h2", []byte("b2")))
	e.clock.Advance(IdempotencyLifetime/2 - time.Second)
	e.wantCached(t, "old", 201, "h1", []byte("b1")) // just inside its lifetime

	e.clock.Advance(2 * time.Second)
	e.wantAbsent(t, "old") // just past it
	e.wantCached(t, "young", 202, "h2", []byte("b2"))

	// An expired response no longer blocks a new one under its key.
	must(t, e.s.SaveIdempotent(e.ctx, "old", 500, "h3", []byte("b3")))
	e.wantCached(t, "old", 500, "h3", []byte("b3"))
	must(t, e.s.SaveIdempotent(e.ctx, "old", 200, "h4", []byte("b4")))
	e.wantCached(t, "old", 500, "h3", []byte("b3"))

	// Much later everything has expired, and saving sweeps the old rows
	// (which the loads cannot tell; the backend's own tests count rows).
	e.clock.Advance(3 * IdempotencyLifetime)
	e.wantAbsent(t, "old")
	e.wantAbsent(t, "young")
	must(t, e.s.SaveIdempotent(e.ctx, "new", 200, "", []byte("b")))
	e.wantCached(t, "new", 200, "", []byte("b"))
	e.wantAbsent(t, "young")
}

func testIdempotencyConcurrent(t *testing.T, e *env) {
	for round := range 3 {
		key := fmt.Sprintf("race-%d", round)
		errs := race(Contenders, func(i int) error {
			return e.s.SaveIdempotent(e.ctx, key, 200+i, "", fmt.Appendf(nil, "body %d", i))
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("goroutine %d: %v", i, err)
			}
		}
		status, _, body, ok, err := e.s.LoadIdempotent(e.ctx, key)
		must(t, err)
		if !ok || string(body) != fmt.Sprintf("body %d", status-200) {
			t.Fatalf("round %d: loaded %d %q %v: not one writer's response", round, status, body, ok)
		}
		// Later saves do not change it.
		must(t, e.s.SaveIdempotent(e.ctx, key, 999, "", nil))
		e.wantCached(t, key, status, "", body)
	}
}
