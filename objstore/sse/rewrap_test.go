package sse_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe/objstore/sse"
)

// rotation keyrings: old has k1; both has k1 then k2 (current); only has k2.
type rotation struct{ old, both, only *sse.LocalKeyring }

func newRotation(t *testing.T) rotation {
	return rotation{
		old:  mustKeyring(t, keyLine("k1", 1)),
		both: mustKeyring(t, keyLine("k1", 1)+keyLine("k2", 2)),
		only: mustKeyring(t, keyLine("k2", 2)),
	}
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "obj")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func rewrapFile(t *testing.T, path string, kw sse.KeyWrapper) (bool, error) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return sse.Rewrap(context.Background(), f, kw)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openErr opens obj with kw and, on success, checks the plaintext and key id.
func openErr(t *testing.T, kw sse.KeyWrapper, obj, plain []byte, wantKey string) error {
	t.Helper()
	r, err := sse.Open(context.Background(), bytes.NewReader(obj), int64(len(obj)), kw)
	if err != nil {
		return err
	}
	got, err := readAll(r)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, plain) {
		t.Fatal("plaintext mismatch")
	}
	if r.KeyID() != wantKey {
		t.Fatalf("KeyID = %q, want %q", r.KeyID(), wantKey)
	}
	return nil
}

func TestRewrap_Rotation(t *testing.T) {
	k := newRotation(t)
	plain := plaintext(2*S+5, 21)
	before := encrypt(t, k.old, plain)
	path := writeTemp(t, before)

	if err := openErr(t, k.only, before, plain, "k2"); !errors.Is(err, sse.ErrUnknownKey) {
		t.Fatalf("new-key-only keyring before rewrap: %v, want ErrUnknownKey", err)
	}
	changed, err := rewrapFile(t, path, k.both)
	if err != nil || !changed {
		t.Fatalf("Rewrap = %v, %v", changed, err)
	}
	after := readFile(t, path)
	if !bytes.Equal(before[sse.HeaderSize:], after[sse.HeaderSize:]) || !bytes.Equal(before[:sse.FixedSize], after[:sse.FixedSize]) {
		t.Fatal("Rewrap touched data segments or the fixed header")
	}
	if g := sse.SlotGenerations(after); g != [2]uint64{0, 2} {
		t.Fatalf("slot generations after rewrap = %v, want [0 2]", g)
	}
	if err := openErr(t, k.only, after, plain, "k2"); err != nil {
		t.Fatalf("new-key-only keyring after rewrap: %v", err)
	}
	if err := openErr(t, k.both, after, plain, "k2"); err != nil {
		t.Fatalf("both keys after rewrap: %v", err)
	}
	if err := openErr(t, k.old, after, plain, "k1"); !errors.Is(err, sse.ErrUnknownKey) {
		t.Fatalf("old-key-only keyring after rewrap: %v, want ErrUnknownKey (old slot retired)", err)
	}

	// Already current: no-op.
	changed, err = rewrapFile(t, path, k.both)
	if err != nil || changed {
		t.Fatalf("second Rewrap = %v, %v; want false, nil", changed, err)
	}
	if !bytes.Equal(readFile(t, path), after) {
		t.Fatal("no-op Rewrap changed the file")
	}

	// Rotate again: the slots alternate.
	k3 := mustKeyring(t, keyLine("k2", 2)+keyLine("k3", 3))
	if changed, err := rewrapFile(t, path, k3); err != nil || !changed {
		t.Fatalf("third Rewrap = %v, %v", changed, err)
	}
	third := readFile(t, path)
	if g := sse.SlotGenerations(third); g != [2]uint64{3, 0} {
		t.Fatalf("slot generations = %v, want [3 0]", g)
	}
	if err := openErr(t, mustKeyring(t, keyLine("k3", 3)), third, plain, "k3"); err != nil {
		t.Fatal(err)
	}
}

func TestRewrap_Errors(t *testing.T) {
	k := newRotation(t)
	plainPath := writeTemp(t, bytes.Repeat([]byte("not encrypted "), 200))
	if _, err := rewrapFile(t, plainPath, k.both); !errors.Is(err, sse.ErrNotEncrypted) {
		t.Fatalf("plain file: %v", err)
	}
	obj := encrypt(t, k.old, plaintext(10, 1))
	if _, err := rewrapFile(t, writeTemp(t, obj), k.only); !errors.Is(err, sse.ErrUnknownKey) {
		t.Fatalf("keyring without the object's key: %v", err)
	}
	bad := clone(obj)
	bad[sse.SlotAOffset+20] ^= 1
	if _, err := rewrapFile(t, writeTemp(t, bad), k.both); !errors.Is(err, sse.ErrCorrupt) {
		t.Fatalf("damaged slot: %v", err)
	}
	if _, err := rewrapFile(t, writeTemp(t, obj[:sse.HeaderSize+10]), k.both); !errors.Is(err, sse.ErrCorrupt) {
		t.Fatalf("impossible size: %v", err)
	}
	// A read-only handle cannot be rewrapped.
	path := writeTemp(t, obj)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := sse.Rewrap(context.Background(), f, k.both); err == nil {
		t.Fatal("Rewrap through a read-only handle succeeded")
	}
	if err := openErr(t, k.old, readFile(t, path), plaintext(10, 1), "k1"); err != nil {
		t.Fatalf("object after failed Rewrap: %v", err)
	}
}

// TestRewrap_Crash splices the header states a crash can leave between
// "before" (slot A = k1, gen 1) and "after" (slot B = k2, gen 2, slot A zero).
func TestRewrap_Crash(t *testing.T) {
	k := newRotation(t)
	plain := plaintext(S+77, 31)
	before := encrypt(t, k.old, plain)
	path := writeTemp(t, before)
	if _, err := rewrapFile(t, path, k.both); err != nil {
		t.Fatal(err)
	}
	after := readFile(t, path)
	slotA := func(b []byte) []byte { return b[sse.SlotAOffset : sse.SlotAOffset+sse.SlotSize] }
	slotB := func(b []byte) []byte { return b[sse.SlotBOffset : sse.SlotBOffset+sse.SlotSize] }

	// 1. Torn write of the new slot B: the old slot A rules.
	for _, n := range []int{1, 9, 100, 240, sse.SlotSize - 4, sse.SlotSize - 1} {
		torn := clone(before)
		copy(slotB(torn), slotB(after)[:n])
		if err := openErr(t, k.both, torn, plain, "k1"); err != nil {
			t.Fatalf("torn new slot (%d bytes): %v", n, err)
		}
		if err := openErr(t, k.only, torn, plain, "k2"); !errors.Is(err, sse.ErrUnknownKey) {
			t.Fatalf("torn new slot (%d bytes), new key only: %v", n, err)
		}
		// A retry completes the rotation.
		p := writeTemp(t, torn)
		if changed, err := rewrapFile(t, p, k.both); err != nil || !changed {
			t.Fatalf("retry after torn write: %v, %v", changed, err)
		}
		if err := openErr(t, k.only, readFile(t, p), plain, "k2"); err != nil {
			t.Fatalf("after retry: %v", err)
		}
	}

	// 2. Crash after the new slot was synced, before the old one was zeroed:
	// both open; the newer generation wins when both keys are known.
	both := clone(before)
	copy(slotB(both), slotB(after))
	if err := openErr(t, k.both, both, plain, "k2"); err != nil {
		t.Fatalf("both slots: %v", err)
	}
	if err := openErr(t, k.only, both, plain, "k2"); err != nil {
		t.Fatalf("both slots, new key only: %v", err)
	}
	if err := openErr(t, k.old, both, plain, "k1"); err != nil {
		t.Fatalf("both slots, old key only: %v", err)
	}
	// Rewrap finishes the rotation by retiring the old slot; it reports no change
	// of key.
	p := writeTemp(t, both)
	if changed, err := rewrapFile(t, p, k.both); err != nil || changed {
		t.Fatalf("Rewrap on both slots = %v, %v; want false, nil", changed, err)
	}
	if !bytes.Equal(readFile(t, p), after) {
		t.Fatal("finishing the rotation did not yield the rotated header")
	}

	// 3. Torn zeroing of the old slot: the new slot rules.
	for _, n := range []int{1, 200, sse.SlotSize - 1} {
		torn := clone(both)
		clear(slotA(torn)[:n])
		if err := openErr(t, k.only, torn, plain, "k2"); err != nil {
			t.Fatalf("torn zeroing (%d bytes): %v", n, err)
		}
	}
}
