package sse_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/floe-lake/floe/objstore/sse"
)

// corruptObject is the fixture for corruption tests: 3 full segments and a
// partial fourth.
func corruptFixture(t *testing.T) (kr *sse.LocalKeyring, plain, obj []byte) {
	kr = testKeyring(t)
	plain = plaintext(3*S+100, 11)
	return kr, plain, encrypt(t, kr, plain)
}

func segOff(i int) int { return H + i*span }

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// readErr opens obj and reads the whole plaintext both ways, returning the
// first error (from Open, ReadAt or the range reader).
func readErr(kr sse.KeyWrapper, obj []byte) error {
	r, err := sse.Open(context.Background(), bytes.NewReader(obj), int64(len(obj)), kr)
	if err != nil {
		return err
	}
	if _, err := readAll(r); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, r.NewRangeReader(0, -1))
	return err
}

func TestCorrupt_FixedHeader(t *testing.T) {
	kr, _, obj := corruptFixture(t)
	for off := 0; off < sse.FixedSize; off++ {
		for _, bit := range []byte{0x01, 0x80} {
			bad := clone(obj)
			bad[off] ^= bit
			_, err := sse.Open(context.Background(), bytes.NewReader(bad), int64(len(bad)), kr)
			want := sse.ErrCorrupt
			if off < 8 { // the magic: the file no longer looks encrypted
				want = sse.ErrNotEncrypted
			}
			if !errors.Is(err, want) {
				t.Fatalf("flip %#x at %d: Open: %v, want %v", bit, off, err, want)
			}
		}
	}
}

func TestCorrupt_ActiveSlotAndReserved(t *testing.T) {
	kr, _, obj := corruptFixture(t)
	offs := []int{}
	for off := sse.SlotAOffset; off < sse.SlotAOffset+sse.SlotSize; off++ {
		offs = append(offs, off)
	}
	for off := sse.ReservedOffset; off < H; off++ {
		offs = append(offs, off)
	}
	for _, off := range offs {
		bad := clone(obj)
		bad[off] ^= 0x10
		_, err := sse.Open(context.Background(), bytes.NewReader(bad), int64(len(bad)), kr)
		if !errors.Is(err, sse.ErrCorrupt) {
			t.Fatalf("flip at %d: Open: %v, want ErrCorrupt", off, err)
		}
	}
}

// A damaged inactive slot looks like a torn Rewrap: it is ignored and the
// data still reads correctly.
func TestCorrupt_InactiveSlotIgnored(t *testing.T) {
	kr, plain, obj := corruptFixture(t)
	for off := sse.SlotBOffset; off < sse.SlotBOffset+sse.SlotSize; off += 7 {
		bad := clone(obj)
		bad[off] ^= 0xff
		r, err := sse.Open(context.Background(), bytes.NewReader(bad), int64(len(bad)), kr)
		if err != nil {
			t.Fatalf("flip at %d: Open: %v", off, err)
		}
		if got, err := readAll(r); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("flip at %d: read: %v", off, err)
		}
	}
}

func TestCorrupt_Segments(t *testing.T) {
	kr, plain, obj := corruptFixture(t)
	other := encrypt(t, kr, plain) // same plaintext and key, different DEK
	last := 3
	tests := []struct {
		name   string
		mutate func([]byte) []byte
		badSeg int // first segment whose range must fail; earlier ones must read
	}{
		{"flip first ciphertext byte", func(b []byte) []byte { b[segOff(1)] ^= 1; return b }, 1},
		{"flip mid ciphertext", func(b []byte) []byte { b[segOff(0)+S/2] ^= 0x40; return b }, 0},
		{"flip tag", func(b []byte) []byte { b[segOff(2)+S+3] ^= 1; return b }, 2},
		{"flip last byte", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, last},
		{"swap segments 0 and 1", func(b []byte) []byte {
			s0 := clone(b[segOff(0):segOff(1)])
			copy(b[segOff(0):], b[segOff(1):segOff(2)])
			copy(b[segOff(1):], s0)
			return b
		}, 0},
		{"duplicate segment 1 over 2", func(b []byte) []byte {
			copy(b[segOff(2):segOff(3)], b[segOff(1):segOff(2)])
			return b
		}, 2},
		{"segment from another object", func(b []byte) []byte {
			copy(b[segOff(1):segOff(2)], other[segOff(1):segOff(2)])
			return b
		}, 1},
		{"header from another object", func(b []byte) []byte {
			copy(b[:H], other[:H])
			return b
		}, 0},
		{"truncate at segment boundary", func(b []byte) []byte { return b[:segOff(2)] }, 1},
		{"truncate mid-segment", func(b []byte) []byte { return b[:segOff(1)+100] }, 1},
		{"truncate to one full segment", func(b []byte) []byte { return b[:segOff(1)] }, 0},
		{"truncate to empty object", func(b []byte) []byte { return b[:H+16] }, 0},
		{"append a byte", func(b []byte) []byte { return append(b, 0) }, last},
		{"append 17 bytes", func(b []byte) []byte { return append(b, make([]byte, 17)...) }, last},
		{"append a full segment", func(b []byte) []byte { return append(b, b[segOff(0):segOff(1)]...) }, last},
		{"append final segment again", func(b []byte) []byte { return append(b, b[segOff(last):]...) }, last},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := tt.mutate(clone(obj))
			if err := readErr(kr, bad); !errors.Is(err, sse.ErrCorrupt) {
				t.Fatalf("whole read: %v, want ErrCorrupt", err)
			}
			r, err := sse.Open(context.Background(), bytes.NewReader(bad), int64(len(bad)), kr)
			if err != nil {
				if errors.Is(err, sse.ErrCorrupt) {
					return // impossible size: caught at Open
				}
				t.Fatalf("Open: %v", err)
			}
			for i := 0; i < tt.badSeg; i++ {
				p := make([]byte, S)
				if _, err := r.ReadAt(p, int64(i)*S); err != nil || !bytes.Equal(p, plain[i*S:(i+1)*S]) {
					t.Fatalf("intact segment %d: %v", i, err)
				}
			}
			off := int64(tt.badSeg) * S
			if off < r.Size() {
				n, err := r.ReadAt(make([]byte, 10), off)
				if !errors.Is(err, sse.ErrCorrupt) || n != 0 {
					t.Fatalf("ReadAt segment %d: n %d, %v; want ErrCorrupt", tt.badSeg, n, err)
				}
				n64, err := io.Copy(io.Discard, r.NewRangeReader(off, 10))
				if !errors.Is(err, sse.ErrCorrupt) || n64 != 0 {
					t.Fatalf("range reader segment %d: n %d, %v; want ErrCorrupt", tt.badSeg, n64, err)
				}
			}
		})
	}
}

// Every truncation point either fails Open or fails a read of the whole
// object.
func TestCorrupt_EveryTruncation(t *testing.T) {
	kr := testKeyring(t)
	obj := encrypt(t, kr, plaintext(2*S+40, 3))
	cuts := []int{0, 1, 8, H - 1, H, H + 1}
	for _, base := range []int{segOff(0), segOff(1), segOff(2)} {
		for d := -17; d <= 17; d++ {
			cuts = append(cuts, base+d)
		}
	}
	for _, c := range cuts {
		if c < 0 || c >= len(obj) {
			continue
		}
		err := readErr(kr, obj[:c])
		if !errors.Is(err, sse.ErrCorrupt) && !errors.Is(err, sse.ErrNotEncrypted) {
			t.Fatalf("truncated to %d of %d bytes: %v", c, len(obj), err)
		}
	}
}

// A partial read that ends before a damaged segment still succeeds, and one
// that spans it reports the bytes before it.
func TestCorrupt_PartialReadAt(t *testing.T) {
	kr, plain, obj := corruptFixture(t)
	obj[segOff(2)+5] ^= 1
	r := open(t, kr, obj)
	p := make([]byte, 2*S)
	if _, err := r.ReadAt(p, 0); err != nil || !bytes.Equal(p, plain[:2*S]) {
		t.Fatalf("read before damage: %v", err)
	}
	n, err := r.ReadAt(p, S+10)
	if !errors.Is(err, sse.ErrCorrupt) || n != S-10 || !bytes.Equal(p[:n], plain[S+10:2*S]) {
		t.Fatalf("read across damage: n %d, %v", n, err)
	}
	got, err := io.ReadAll(r.NewRangeReader(S+10, -1))
	if !errors.Is(err, sse.ErrCorrupt) || !bytes.Equal(got, plain[S+10:2*S]) {
		t.Fatalf("range reader across damage: %d bytes, %v", len(got), err)
	}
}
