package sse_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/floe-lake/floe/objstore/sse"
)

const benchStream = 1 << 20

// BenchmarkEncrypt measures sequential encryption of a 1 MiB object (header,
// key wrap and 16 segments) written in 32 KiB chunks.
func BenchmarkEncrypt(b *testing.B) {
	kr := testKeyring(b)
	plain := plaintext(benchStream, 1)
	ctx := context.Background()
	b.SetBytes(benchStream)
	b.ReportAllocs()
	for b.Loop() {
		w, err := sse.NewWriter(ctx, io.Discard, kr)
		if err != nil {
			b.Fatal(err)
		}
		for p := plain; len(p) > 0; p = p[32<<10:] {
			if _, err := w.Write(p[:32<<10]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecryptSequential measures Open plus a full sequential read of a
// 1 MiB object through NewRangeReader.
func BenchmarkDecryptSequential(b *testing.B) {
	kr := testKeyring(b)
	obj := encrypt(b, kr, plaintext(benchStream, 1))
	ctx := context.Background()
	buf := make([]byte, 32<<10)
	b.SetBytes(benchStream)
	b.ReportAllocs()
	for b.Loop() {
		r, err := sse.Open(ctx, bytes.NewReader(obj), int64(len(obj)), kr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r.NewRangeReader(0, -1)}, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadAt4KiB measures random 4 KiB ReadAt calls on an open 16 MiB
// object; each decrypts (and verifies) the whole 64 KiB segment it touches.
func BenchmarkReadAt4KiB(b *testing.B) {
	const size = 16 << 20
	kr := testKeyring(b)
	r := open(b, kr, encrypt(b, kr, plaintext(size, 2)))
	rnd := rand.New(rand.NewPCG(1, 2))
	p := make([]byte, 4096)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		off := rnd.Int64N(size - int64(len(p)))
		if _, err := r.ReadAt(p, off); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures header parsing, key unwrap and key derivation.
func BenchmarkOpen(b *testing.B) {
	kr := testKeyring(b)
	obj := encrypt(b, kr, plaintext(100, 1))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sse.Open(ctx, bytes.NewReader(obj), int64(len(obj)), kr); err != nil {
			b.Fatal(err)
		}
	}
}
