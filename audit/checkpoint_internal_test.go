package audit

import (
	"context"
	"encoding/json"
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

// FuzzDecodeSeal: a seal object read from the warehouse is untrusted input
// (anyone who can write the warehouse can put one there); decodeSeal never
// panics, and what it accepts is a version-1 seal whose seq matches its
// object name and follows an earlier seal.
func FuzzDecodeSeal(f *testing.F) {
	body := []byte(`{"v":1,"seq":42,"hash":"ab","time":"2026-03-01T00:00:00Z","prev_seq":7,"prev":"cd","node":"n"}`)
	good, err := json.Marshal(sealObject{Body: body, KeyID: "k", Sig: []byte("sig")})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(good), `{}`, `{"seal":{}}`, `{"seal":{"v":1,"seq":42,"prev_seq":42}}`,
		`{"seal":{"v":2,"seq":42}}`, `{"seal":[],"kid":1}`, `[`, ``, `{"seal":{"v":1,"seq":42},"extra":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs := decodeSeal(context.Background(), acceptAll{}, sealName(42), data)
		if rs.err != nil {
			if rs.signed {
				t.Fatalf("an unreadable seal counted as signed: %q", data)
			}
			return
		}
		if rs.seal.Version != SealVersion || rs.seal.Seq != 42 || rs.seal.PrevSeq < 0 || rs.seal.PrevSeq >= 42 || !rs.signed {
			t.Fatalf("accepted %+v from %q", rs.seal, data)
		}
	})
}

// TestSealNames: seal names sort in seq order and parse back; nothing else
// is taken for one.
func TestSealNames(t *testing.T) {
	if sealName(9) >= sealName(10) || sealName(10) >= sealName(1<<40) {
		t.Error("seal names do not sort by seq")
	}
	for _, tt := range []struct {
		name string
		seq  int64
		ok   bool
	}{
		{sealName(1), 1, true},
		{sealName(1 << 40), 1 << 40, true},
		{"00000000000000000000.json", 0, false},
		{"1.json", 0, false},
		{"0000000000000000000a.json", 0, false},
		{sealName(5) + ".bak", 0, false},
		{"-0000000000000000001.json", 0, false},
		{"+0000000000000000001.json", 0, false},
	} {
		if seq, ok := sealSeq(tt.name); seq != tt.seq && tt.ok || ok != tt.ok {
			t.Errorf("sealSeq(%q) = %d, %v", tt.name, seq, ok)
		}
	}
}
