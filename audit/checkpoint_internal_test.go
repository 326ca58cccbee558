package audit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// acceptAll is a Signer whose signatures always verify: the fuzz test
// reaches the body's decoding.
type acceptAll struct{}

func (acceptAll) SignAuditCheckpoint(context.Context, []byte) (string, []byte, error) {
	return "k", []byte("sig"), nil
}
func (acceptAll) VerifyAuditCheckpoint(context.Context, string, []byte, []byte) error { return nil }

// FuzzCheckpointBody: a stored checkpoint body is untrusted input; open
// never panics, and whatever it accepts is a consistent version-1
// checkpoint that encodes back to an accepted body.
func FuzzCheckpointBody(f *testing.F) {
	good, err := encodeCheckpoint(Checkpoint{Version: 1, Seq: 42, Hash: "ab", Pruned: 42, Time: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(good), `{}`, `{"v":2,"seq":1,"pruned":1}`, `{"v":1,"seq":-1}`, `{"v":1,"seq":1,"pruned":2}`,
		`{"v":1,"seq":1,"pruned":1,"extra":true}`, `[`, ``, `{"v":1,"seq":1,"pruned":1,"time":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := open(context.Background(), acceptAll{}, SignedCheckpoint{Body: body, KeyID: "k"})
		if err != nil {
			return
		}
		if c.Version != CheckpointVersion || c.Seq <= 0 || c.Pruned < 0 || c.Pruned > c.Seq {
			t.Fatalf("accepted an inconsistent checkpoint %+v from %q", c, body)
		}
		again, err := encodeCheckpoint(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := open(context.Background(), acceptAll{}, SignedCheckpoint{Body: again}); err != nil {
			t.Fatalf("re-encoded %+v does not open: %v", c, err)
		}
	})
}

// TestOpenRefusesUnknownVersion: a later format is never misread as this one.
func TestOpenRefusesUnknownVersion(t *testing.T) {
	_, err := open(context.Background(), acceptAll{}, SignedCheckpoint{Body: []byte(`{"v":2,"seq":5,"hash":"x","pruned":5,"time":"2026-03-01T00:00:00Z"}`)})
	if err == nil || errors.Is(err, ErrTampered) {
		t.Fatalf("open of a version-2 checkpoint = %v, want a version error", err)
	}
}
