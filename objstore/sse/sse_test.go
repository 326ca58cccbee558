package sse_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/floe-lake/floe/objstore/sse"
)

const (
	S    = sse.SegmentSize
	H    = sse.HeaderSize
	span = S + sse.TagSize
)

// keyLine returns a key file line with a deterministic key derived from seed.
func keyLine(id string, seed byte) string {
	return id + " " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{seed}, sse.KeySize)) + "\n"
}

func mustKeyring(tb testing.TB, text string) *sse.LocalKeyring {
	tb.Helper()
	kr, err := sse.ParseKeyring([]byte(text))
	if err != nil {
		tb.Fatalf("ParseKeyring: %v", err)
	}
	return kr
}

func testKeyring(tb testing.TB) *sse.LocalKeyring {
	return mustKeyring(tb, keyLine("k1", 1))
}

// plaintext returns n deterministic pseudo-random bytes.
func plaintext(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func encrypt(tb testing.TB, kw sse.KeyWrapper, plain []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := sse.NewWriter(context.Background(), &buf, kw)
	if err != nil {
		tb.Fatalf("NewWriter: %v", err)
	}
	if _, err := w.Write(plain); err != nil {
		tb.Fatalf("Write: %v", err)
	}
	if err := w.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
	return buf.Bytes()
}

func open(tb testing.TB, kw sse.KeyWrapper, obj []byte) *sse.Reader {
	tb.Helper()
	r, err := sse.Open(context.Background(), bytes.NewReader(obj), int64(len(obj)), kw)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return r
}

// readAll reads the whole plaintext through ReadAt.
func readAll(r *sse.Reader) ([]byte, error) {
	p := make([]byte, r.Size())
	n, err := r.ReadAt(p, 0)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	return p[:n], err
}

func TestRoundTrip(t *testing.T) {
	kr := testKeyring(t)
	tests := []struct {
		name string
		size int
	}{
		{"empty", 0},
		{"one byte", 1},
		{"segment minus one", S - 1},
		{"one segment", S},
		{"segment plus one", S + 1},
		{"ten segments plus 17", 10*S + 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := plaintext(tt.size, uint64(tt.size))
			obj := encrypt(t, kr, plain)
			wantCT, err := sse.CiphertextSize(int64(tt.size))
			if err != nil || int64(len(obj)) != wantCT {
				t.Fatalf("ciphertext is %d bytes, CiphertextSize = %d, %v", len(obj), wantCT, err)
			}
			if p, err := sse.PlaintextSize(int64(len(obj))); err != nil || p != int64(tt.size) {
				t.Fatalf("PlaintextSize(%d) = %d, %v; want %d", len(obj), p, err, tt.size)
			}
			if !sse.IsEncrypted(obj) {
				t.Fatal("IsEncrypted = false")
			}
			r := open(t, kr, obj)
			if r.Size() != int64(tt.size) || r.KeyID() != "k1" {
				t.Fatalf("Size, KeyID = %d, %q", r.Size(), r.KeyID())
			}
			got, err := readAll(r)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("ReadAt whole: err %v, equal %v", err, bytes.Equal(got, plain))
			}
			got, err = io.ReadAll(r.NewRangeReader(0, -1))
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("NewRangeReader whole: err %v, equal %v", err, bytes.Equal(got, plain))
			}
			checkRanges(t, r, plain, uint64(tt.size))
		})
	}
}

// checkRanges compares random and edge ranges read both ways with plain.
func checkRanges(t *testing.T, r *sse.Reader, plain []byte, seed uint64) {
	t.Helper()
	size := int64(len(plain))
	type rng struct{ off, n int64 }
	ranges := []rng{{0, 0}, {0, 1}, {size, 0}, {size, 10}, {size + 5, 3}}
	for _, b := range []int64{S, 2 * S, 10 * S} {
		if b < size {
			ranges = append(ranges, rng{b - 1, 2}, rng{b, 1}, rng{b - 100, S + 200})
		}
	}
	if size > 0 {
		ranges = append(ranges, rng{size - 1, 1}, rng{size - 1, 100}, rng{0, size + 1})
	}
	rnd := rand.New(rand.NewPCG(seed, 7))
	for range 40 {
		off := rnd.Int64N(size + 2)
		n := rnd.Int64N(3*S + 2)
		ranges = append(ranges, rng{off, n})
	}
	for _, g := range ranges {
		lo, hi := min(g.off, size), min(g.off+g.n, size)
		want := plain[lo:hi]

		p := make([]byte, g.n)
		n, err := r.ReadAt(p, g.off)
		if !bytes.Equal(p[:n], want) {
			t.Fatalf("ReadAt(%d, off %d): got %d bytes, mismatch", g.n, g.off, n)
		}
		pastEnd := g.off+g.n > size || g.off >= size // like bytes.Reader
		if pastEnd && err != io.EOF {
			t.Fatalf("ReadAt(%d, off %d) past end: err %v, want io.EOF", g.n, g.off, err)
		}
		if !pastEnd && (err != nil || n != int(g.n)) {
			t.Fatalf("ReadAt(%d, off %d): n %d, err %v", g.n, g.off, n, err)
		}

		got, err := io.ReadAll(r.NewRangeReader(g.off, g.n))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("NewRangeReader(%d, %d): %d bytes, err %v, equal %v", g.off, g.n, len(got), err, bytes.Equal(got, want))
		}
	}
}

func TestRangeReader_Invalid(t *testing.T) {
	kr := testKeyring(t)
	r := open(t, kr, encrypt(t, kr, plaintext(10, 1)))
	for _, g := range [][2]int64{{-1, 5}, {0, -2}} {
		if _, err := r.NewRangeReader(g[0], g[1]).Read(make([]byte, 4)); err == nil || err == io.EOF {
			t.Errorf("NewRangeReader(%d, %d).Read: err %v, want an error", g[0], g[1], err)
		}
	}
	if _, err := r.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("ReadAt at -1: no error")
	}
}

func TestRangeReader_SmallReads(t *testing.T) {
	kr := testKeyring(t)
	plain := plaintext(2*S+300, 3)
	r := open(t, kr, encrypt(t, kr, plain))
	for _, chunk := range []int{1, 7, 4096, S - 1, S + 1} {
		rr := r.NewRangeReader(100, -1)
		var got []byte
		p := make([]byte, chunk)
		for {
			n, err := rr.Read(p)
			got = append(got, p[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("chunk %d: %v", chunk, err)
			}
		}
		if !bytes.Equal(got, plain[100:]) {
			t.Fatalf("chunk %d: mismatch", chunk)
		}
	}
}

func TestWriter_Chunking(t *testing.T) {
	kr := testKeyring(t)
	plain := plaintext(3*S+5, 9)
	for _, chunk := range []int{1, 13, S - 1, S, S + 1, 2*S + 3, len(plain)} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			var buf bytes.Buffer
			w, err := sse.NewWriter(context.Background(), &buf, kr)
			if err != nil {
				t.Fatal(err)
			}
			for p := plain; len(p) > 0; {
				n := min(chunk, len(p))
				if m, err := w.Write(p[:n]); err != nil || m != n {
					t.Fatalf("Write = %d, %v", m, err)
				}
				p = p[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if want, _ := sse.CiphertextSize(int64(len(plain))); int64(buf.Len()) != want {
				t.Fatalf("ciphertext %d bytes, want %d", buf.Len(), want)
			}
			got, err := readAll(open(t, kr, buf.Bytes()))
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("round trip: %v", err)
			}
		})
	}
}

func TestWriter_NoPlaintextOut(t *testing.T) {
	kr := testKeyring(t)
	marker := []byte("FLOE-SECRET-MARKER")
	plain := bytes.Repeat(marker, (3*S)/len(marker))
	obj := encrypt(t, kr, plain)
	if bytes.Contains(obj, marker) || bytes.Contains(obj, marker[:8]) {
		t.Fatal("ciphertext contains plaintext")
	}
	// Two encryptions of the same plaintext differ (fresh DEK and nonce prefix).
	if bytes.Equal(obj[H:], encrypt(t, kr, plain)[H:]) {
		t.Fatal("two encryptions are identical")
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestWriter_Errors(t *testing.T) {
	ctx := context.Background()
	kr := testKeyring(t)
	if _, err := sse.NewWriter(ctx, &failWriter{}, kr); err == nil {
		t.Fatal("header write failure not reported")
	}
	if _, err := sse.NewWriter(ctx, io.Discard, nil); err == nil {
		t.Fatal("nil KeyWrapper accepted")
	}
	w, err := sse.NewWriter(ctx, &failWriter{after: 1}, kr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 2*S)); err == nil {
		t.Fatal("segment write failure not reported")
	}
	if _, err := w.Write([]byte{1}); err == nil {
		t.Fatal("error is not sticky")
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after failure returned nil")
	}

	w, _ = sse.NewWriter(ctx, io.Discard, kr)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Write([]byte{1}); err == nil {
		t.Fatal("Write after Close accepted")
	}
}

// badWrapper returns what a misbehaving KeyWrapper might.
type badWrapper struct {
	id      string
	wrapped []byte
}

func (b badWrapper) Wrap(context.Context, []byte) (string, []byte, error) {
	return b.id, b.wrapped, nil
}
func (b badWrapper) Unwrap(context.Context, string, []byte) ([]byte, error) {
	return nil, errors.New("unreachable")
}
func (b badWrapper) CurrentKeyID() string { return b.id }

func TestNewWriter_RejectsOversizedWrap(t *testing.T) {
	for _, bw := range []badWrapper{
		{id: "", wrapped: []byte{1}},
		{id: "has space", wrapped: []byte{1}},
		{id: strings.Repeat("k", 256), wrapped: []byte{1}},
		{id: "k", wrapped: nil},
		{id: "k", wrapped: make([]byte, 433)},
	} {
		if _, err := sse.NewWriter(context.Background(), io.Discard, bw); err == nil {
			t.Errorf("NewWriter accepted key id %q with %d wrapped bytes", bw.id, len(bw.wrapped))
		}
	}
	// The largest that fits.
	if _, err := sse.NewWriter(context.Background(), io.Discard, badWrapper{id: "k", wrapped: make([]byte, 432)}); err != nil {
		t.Errorf("NewWriter rejected a wrap that fits: %v", err)
	}
}

// transientWrapper fails Unwrap with an operational error.
type transientWrapper struct{ *sse.LocalKeyring }

func (transientWrapper) Unwrap(context.Context, string, []byte) ([]byte, error) {
	return nil, errors.New("kms unreachable")
}

func TestOpen_Errors(t *testing.T) {
	ctx := context.Background()
	kr := testKeyring(t)
	obj := encrypt(t, kr, plaintext(100, 1))
	other := mustKeyring(t, keyLine("k2", 2))
	sameIDOtherKey := mustKeyring(t, keyLine("k1", 9))
	tests := []struct {
		name string
		data []byte
		kw   sse.KeyWrapper
		want error
	}{
		{"plain file", []byte("PAR1 not encrypted at all, but long enough"), kr, sse.ErrNotEncrypted},
		{"empty file", nil, kr, sse.ErrNotEncrypted},
		{"short plain", []byte("FLO"), kr, sse.ErrNotEncrypted},
		{"magic only", []byte("FLOESSE1"), kr, sse.ErrCorrupt},
		{"header only", obj[:H], kr, sse.ErrCorrupt},
		{"half header", obj[:H/2], kr, sse.ErrCorrupt},
		{"unknown key", obj, other, sse.ErrUnknownKey},
		{"same id other key", obj, sameIDOtherKey, sse.ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sse.Open(ctx, bytes.NewReader(tt.data), int64(len(tt.data)), tt.kw)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open: %v, want %v", err, tt.want)
			}
		})
	}
	_, err := sse.Open(ctx, bytes.NewReader(obj), int64(len(obj)), transientWrapper{kr})
	if err == nil || errors.Is(err, sse.ErrCorrupt) || !strings.Contains(err.Error(), "kms unreachable") {
		t.Fatalf("transient unwrap error: %v", err)
	}
	if _, err := sse.Open(ctx, bytes.NewReader(obj), int64(len(obj)), nil); err == nil {
		t.Fatal("nil KeyWrapper accepted")
	}
}

func TestIsEncrypted(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{{"", false}, {"FLOESSE", false}, {"FLOESSE1", true}, {"FLOESSE1xyz", true}, {"PAR1", false}, {"floesse1", false}} {
		if got := sse.IsEncrypted([]byte(tt.in)); got != tt.want {
			t.Errorf("IsEncrypted(%q) = %v", tt.in, got)
		}
	}
}

func TestPlaintextSize(t *testing.T) {
	tests := []struct {
		ct   int64
		want int64 // -1: ErrCorrupt
	}{
		{-1, -1}, {0, -1}, {H, -1}, {H + 15, -1},
		{H + 16, 0}, {H + 17, 1},
		{H + span - 1, S - 1}, {H + span, S},
		{H + span + 1, -1}, {H + span + 16, -1}, {H + span + 17, S + 1},
		{H + 10*span + 33, 10*S + 17},
		{H + (1<<32)*span, sse.MaxPlaintextSize},
		{H + (1<<32)*span + 17, -1},
	}
	for _, tt := range tests {
		got, err := sse.PlaintextSize(tt.ct)
		if tt.want < 0 {
			if !errors.Is(err, sse.ErrCorrupt) {
				t.Errorf("PlaintextSize(%d) = %d, %v; want ErrCorrupt", tt.ct, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("PlaintextSize(%d) = %d, %v; want %d", tt.ct, got, err, tt.want)
		}
	}
	for _, p := range []int64{0, 1, 15, 16, 17, S - 1, S, S + 1, 2 * S, 5*S + 16, sse.MaxPlaintextSize} {
		ct, err := sse.CiphertextSize(p)
		if err != nil {
			t.Fatalf("CiphertextSize(%d): %v", p, err)
		}
		if got, err := sse.PlaintextSize(ct); err != nil || got != p {
			t.Errorf("PlaintextSize(CiphertextSize(%d)) = %d, %v", p, got, err)
		}
	}
	for _, p := range []int64{-1, sse.MaxPlaintextSize + 1} {
		if _, err := sse.CiphertextSize(p); err == nil {
			t.Errorf("CiphertextSize(%d) accepted", p)
		}
	}
}

func TestReader_ConcurrentReadAt(t *testing.T) {
	kr := testKeyring(t)
	plain := plaintext(4*S+99, 5)
	r := open(t, kr, encrypt(t, kr, plain))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			p := make([]byte, 5000)
			for range 50 {
				off := rnd.Int64N(int64(len(plain) - len(p)))
				if _, err := r.ReadAt(p, off); err != nil || !bytes.Equal(p, plain[off:off+int64(len(p))]) {
					errs <- fmt.Errorf("ReadAt at %d: %v", off, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestAllocs(t *testing.T) {
	kr := testKeyring(t)
	w, err := sse.NewWriter(context.Background(), io.Discard, kr)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	if a := testing.AllocsPerRun(100, func() { _, _ = w.Write(chunk) }); a != 0 {
		t.Errorf("Write allocates %.1f times per call", a)
	}
	plain := plaintext(8*S, 1)
	r := open(t, kr, encrypt(t, kr, plain))
	rr := r.NewRangeReader(0, -1)
	p := make([]byte, 4096)
	_, _ = rr.Read(p) // first Read takes the segment buffer
	if a := testing.AllocsPerRun(100, func() { _, _ = rr.Read(p) }); a != 0 {
		t.Errorf("range reader Read allocates %.1f times per call", a)
	}
}

// TestSmallObjectSmallBuffer: reading a small object (a 4 KiB manifest,
// say) allocates about its own size, not a whole segment's scratch buffer
// per open (the SQL endpoint opens hundreds of manifests a query; the
// segment-sized buffers were a fifth of a soak's allocation).
func TestSmallObjectSmallBuffer(t *testing.T) {
	kr := testKeyring(t)
	plain := plaintext(4<<10, 7)
	obj := encrypt(t, kr, plain)
	const rounds = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range rounds {
		got, err := readAll(open(t, kr, obj))
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("read back %d bytes, %v", len(got), err)
		}
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / rounds
	if per > 24<<10 {
		t.Fatalf("opening and reading a 4 KiB object allocates %d bytes, want under 24 KiB (a segment is %d)", per, sse.SegmentSize)
	}
	t.Logf("%d bytes allocated per open and read of a 4 KiB object", per)
}
