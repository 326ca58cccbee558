package bucket

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Throughput benchmarks: the store against reading or writing the same
// file directly. Size defaults to 1 GiB (FLOE_BENCH_MIB overrides):
//
//	go test -run '^$' -bench . -benchtime 3x ./objstore/bucket/

func benchSize(b *testing.B) int64 {
	if v, err := strconv.Atoi(os.Getenv("FLOE_BENCH_MIB")); err == nil && v > 0 {
		return int64(v) << 20
	}
	return 1 << 30
}

// patternReader yields n bytes repeating a random 1 MiB block.
type patternReader struct {
	block []byte
	off   int
	n     int64
}

func newPattern(n int64) *patternReader {
	block := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range block {
		block[i] = byte(r.Uint32())
	}
	return &patternReader{block: block, n: n}
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n {
		b = b[:p.n]
	}
	c := copy(b, p.block[p.off:])
	p.off = (p.off + c) % len(p.block)
	p.n -= int64(c)
	return c, nil
}

// discard is a sink without ReadFrom, so copies use the caller's buffer.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// benchStores returns a plaintext and an encrypted store, each holding the
// object "big" of size bytes.
func benchStores(b *testing.B, size int64) (plain, enc *Store) {
	b.Helper()
	plain = newTestStore(b, nil)
	enc = newTestStore(b, withEncryption(b))
	for _, s := range []*Store{plain, enc} {
		if _, err := s.Put(context.Background(), testBucket, "big", newPattern(size), PutOptions{Size: size}); err != nil {
			b.Fatal(err)
		}
	}
	return plain, enc
}

func BenchmarkGet(b *testing.B) {
	size := benchSize(b)
	plain, enc := benchStores(b, size)
	path := filepath.Join(plain.Root(testBucket), "big")
	buf := make([]byte, bufSize)
	b.Run("direct-read", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.CopyBuffer(discard{}, f, buf)
			_ = f.Close()
			if err != nil || n != size {
				b.Fatal(n, err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		s    *Store
	}{{"plaintext", plain}, {"encrypted", enc}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				obj, err := tc.s.Get(context.Background(), testBucket, "big", GetOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(discard{}, obj.Body)
				_ = obj.Body.Close()
				if err != nil || n != size {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// BenchmarkGetTCP copies into a loopback TCP connection, the path an HTTP
// response takes: direct sendfile(2) of the file against Get's body.
func BenchmarkGetTCP(b *testing.B) {
	size := benchSize(b)
	plain, enc := benchStores(b, size)
	path := filepath.Join(plain.Root(testBucket), "big")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.CopyBuffer(discard{}, c, make([]byte, 1<<20))
	})
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	b.Run("direct-sendfile", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(conn, f)
			_ = f.Close()
			if err != nil || n != size {
				b.Fatal(n, err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		s    *Store
		rng  string
	}{{"plaintext", plain, ""}, {"plaintext-range", plain, fmt.Sprintf("bytes=1-%d", size-2)}, {"encrypted", enc, ""}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				obj, err := tc.s.Get(context.Background(), testBucket, "big", GetOptions{Range: tc.rng})
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.Copy(conn, obj.Body)
				_ = obj.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPut(b *testing.B) {
	size := benchSize(b)
	plain := newTestStore(b, nil)
	enc := newTestStore(b, withEncryption(b))
	dir := b.TempDir()
	buf := make([]byte, bufSize)
	direct := func(sync bool) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				f, err := os.Create(filepath.Join(dir, "direct"))
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.CopyBuffer(onlyFileWriter{f}, newPattern(size), buf)
				if err == nil && sync {
					err = f.Sync()
				}
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("direct-write", direct(false))
	b.Run("direct-write-fsync", direct(true))
	for _, tc := range []struct {
		name string
		s    *Store
	}{{"plaintext", plain}, {"encrypted", enc}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				if _, err := tc.s.Put(context.Background(), testBucket, "big", newPattern(size), PutOptions{Size: size}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// onlyFileWriter hides (*os.File).ReadFrom so the copy uses the buffer.
type onlyFileWriter struct{ f *os.File }

func (w onlyFileWriter) Write(p []byte) (int, error) { return w.f.Write(p) }
