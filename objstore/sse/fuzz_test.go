package sse_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/floe-lake/floe/objstore/sse"
)

// FuzzOpen feeds arbitrary bytes to Open and, when the header opens, reads the
// whole object both ways. Nothing may panic, every failure must be one of the
// package's sentinels, and the two read paths must agree.
func FuzzOpen(f *testing.F) {
	kr := mustKeyring(f, keyLine("k1", 1)+keyLine("k2", 2))
	for _, n := range []int{0, 1, 100, S, S + 3} {
		obj := encrypt(f, kr, plaintext(n, uint64(n)))
		f.Add(obj)
		f.Add(obj[:sse.HeaderSize+16])
	}
	f.Add([]byte("FLOESSE1"))
	f.Add([]byte("PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := sse.Open(context.Background(), bytes.NewReader(data), int64(len(data)), kr)
		if err != nil {
			if !errors.Is(err, sse.ErrCorrupt) && !errors.Is(err, sse.ErrNotEncrypted) && !errors.Is(err, sse.ErrUnknownKey) {
				t.Fatalf("Open: unexpected error %v", err)
			}
			return
		}
		if want, err := sse.PlaintextSize(int64(len(data))); err != nil || want != r.Size() {
			t.Fatalf("Size %d, PlaintextSize %d, %v", r.Size(), want, err)
		}
		a, errA := readAll(r)
		b, errB := io.ReadAll(r.NewRangeReader(0, -1))
		if (errA == nil) != (errB == nil) || !bytes.Equal(a, b) {
			t.Fatalf("ReadAt (%d, %v) and range reader (%d, %v) disagree", len(a), errA, len(b), errB)
		}
		if errA != nil && !errors.Is(errA, sse.ErrCorrupt) {
			t.Fatalf("read: unexpected error %v", errA)
		}
	})
}

// FuzzParseKeyring checks that ParseKeyring never panics and that every
// keyring it accepts wraps and unwraps under each of its keys.
func FuzzParseKeyring(f *testing.F) {
	f.Add([]byte(keyLine("k1", 1)))
	f.Add([]byte("# c\n" + keyLine("a", 1) + keyLine("b", 2)))
	f.Add([]byte(b64(32, 3)))
	f.Add([]byte("a " + b64(31, 3)))
	f.Add([]byte("\r\n\t# x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kr, err := sse.ParseKeyring(data)
		if err != nil {
			return
		}
		ids := kr.KeyIDs()
		if len(ids) == 0 || ids[len(ids)-1] != kr.CurrentKeyID() {
			t.Fatalf("ids %v, current %q", ids, kr.CurrentKeyID())
		}
		ctx := context.Background()
		dek := bytes.Repeat([]byte{9}, sse.KeySize)
		id, w, err := kr.Wrap(ctx, dek)
		if err != nil || id != kr.CurrentKeyID() {
			t.Fatalf("Wrap = %q, %v", id, err)
		}
		if got, err := kr.Unwrap(ctx, id, w); err != nil || !bytes.Equal(got, dek) {
			t.Fatalf("Unwrap: %v", err)
		}
	})
}

// FuzzPlaintextSize checks that PlaintextSize and CiphertextSize are inverse.
func FuzzPlaintextSize(f *testing.F) {
	for _, n := range []int64{0, sse.HeaderSize + 16, sse.HeaderSize + span + 16, 1 << 40} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, ct int64) {
		p, err := sse.PlaintextSize(ct)
		if err != nil {
			if !errors.Is(err, sse.ErrCorrupt) {
				t.Fatal(err)
			}
			return
		}
		if back, err := sse.CiphertextSize(p); err != nil || back != ct {
			t.Fatalf("PlaintextSize(%d) = %d, CiphertextSize = %d, %v", ct, p, back, err)
		}
	})
}
