package auditexport

import (
	"testing"
	"unsafe"
)

func TestBatchAllocator(t *testing.T) {
	for _, size := range []int{0, 1, 63, 64, 65, 1000, 4096, 40_000, 1 << 20} {
		a := newBatchAllocator(1 << 30)
		b := a.Allocate(size)
		if len(b) != size || cap(b) != sizeClass(size) || cap(b) < minBufferClass || cap(b)&(cap(b)-1) != 0 {
			t.Fatalf("Allocate(%d): len %d cap %d", size, len(b), cap(b))
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b[:1:1]))); size > 0 && p%64 != 0 {
			t.Fatalf("Allocate(%d) is not 64-byte aligned: %#x", size, p)
		}
		for i := range b {
			b[i] = 0xff
		}
		a.Free(b)
		// Not reused before recycle: a reader may still hold it.
		if c := a.Allocate(size); size > 0 && &c[:1][0] == &b[:1][0] {
			t.Fatalf("Allocate(%d) reused a buffer freed since the last recycle", size)
		}
		a.recycle()
		// Nor after one: the next batch's writer may still read it.
		if c := a.Allocate(size); size > 0 && &c[:1][0] == &b[:1][0] {
			t.Fatalf("Allocate(%d) reused a buffer freed before only one recycle", size)
		}
		a.recycle()
		c := a.Allocate(size)
		if size > 0 && &c[:1][0] != &b[:1][0] {
			t.Fatalf("Allocate(%d) after recycle did not reuse the freed buffer", size)
		}
		for i, v := range c[:cap(c)] {
			if v != 0 {
				t.Fatalf("Allocate(%d) reused a buffer without zeroing byte %d", size, i)
			}
		}
		if a.kept() != 0 {
			t.Fatalf("%d bytes kept with every buffer handed out", a.kept())
		}
	}
	t.Run("reallocate", func(t *testing.T) {
		a := newBatchAllocator(1 << 20)
		b := a.Allocate(100)
		copy(b, "hello")
		if c := a.Reallocate(120, b); &c[0] != &b[0] || len(c) != 120 { // within its class of 128
			t.Fatalf("Reallocate within the capacity moved or mis-sized the buffer: len %d", len(c))
		}
		c := a.Reallocate(1000, b)
		if string(c[:5]) != "hello" || len(c) != 1000 || a.kept() != 128 {
			t.Fatalf("Reallocate(1000): %q, len %d, kept %d (the old buffer freed)", c[:5], len(c), a.kept())
		}
	})
	t.Run("bound", func(t *testing.T) {
		const max = 4 << 10
		a := newBatchAllocator(max)
		var bs [][]byte
		for range 10 {
			bs = append(bs, a.Allocate(1000)) // 1 KiB each
		}
		for _, b := range bs {
			a.Free(b)
		}
		if a.kept() != max {
			t.Fatalf("kept %d bytes of 10 KiB freed, want the bound %d", a.kept(), max)
		}
		a.Free(make([]byte, 100)) // not one of its buffers: not kept
		a.recycle()
		if a.kept() != max {
			t.Fatalf("kept %d bytes, bound %d", a.kept(), max)
		}
	})
}
