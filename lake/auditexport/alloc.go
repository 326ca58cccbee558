package auditexport

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// minBufferClass is the smallest capacity batchAllocator hands out: Go
// places objects of a power-of-two size of at least 64 bytes at multiples
// of their size, so its buffers have Arrow's 64-byte alignment.
const minBufferClass = 64

// batchAllocator is the Arrow allocator of the record batches the export
// builds (toArrow). It keeps the buffers one batch frees, within a bound,
// for the next batch instead of leaving them to the collector, whose work
// the requests being audited pay for. Capacities are powers of two, so a
// freed buffer fits any later request of its size class.
//
// A freed buffer is not handed out again until the second recycle after it
// was freed: the exporter calls recycle before building each batch, so a
// buffer is reused at the earliest two batches after the one that freed
// it, when that batch is written (a background stream writes batches
// through a queue of one) and whatever read it has finished with it. So a
// buffer released early by a reader is still never overwritten while it is
// read.
type batchAllocator struct {
	max int64 // most bytes of capacity kept

	mu    sync.Mutex
	freed [][]byte         // freed since the last recycle
	aging [][]byte         // freed before the last recycle
	free  map[int][][]byte // reusable, by capacity
	held  int64            // capacity of freed and free
}

var _ memory.Allocator = (*batchAllocator)(nil)

// newBatchAllocator returns an allocator keeping at most max bytes of
// freed buffers.
func newBatchAllocator(max int64) *batchAllocator {
	return &batchAllocator{max: max, free: map[int][][]byte{}}
}

// sizeClass is the capacity a buffer of size bytes is given.
func sizeClass(size int) int {
	if size <= minBufferClass {
		return minBufferClass
	}
	return 1 << bits.Len(uint(size-1))
}

// Allocate returns size zeroed bytes.
func (a *batchAllocator) Allocate(size int) []byte {
	c := sizeClass(size)
	a.mu.Lock()
	if l := a.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		a.free[c] = l[:len(l)-1]
		a.held -= int64(c)
		a.mu.Unlock()
		b = b[:c]
		clear(b)
		return b[:size]
	}
	a.mu.Unlock()
	return make([]byte, size, c)
}

// Reallocate grows or shrinks b to size bytes, keeping its contents.
func (a *batchAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free keeps b for a batch after the next two recycles, unless that would hold
// more than max bytes or b is not one of this allocator's buffers.
func (a *batchAllocator) Free(b []byte) {
	c := cap(b)
	if c < minBufferClass || c&(c-1) != 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held+int64(c) > a.max {
		return
	}
	a.freed = append(a.freed, b[:0])
	a.held += int64(c)
}

// recycle makes the buffers freed before the previous recycle reusable.
func (a *batchAllocator) recycle() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, b := range a.aging {
		a.free[cap(b)] = append(a.free[cap(b)], b)
		a.aging[i] = nil
	}
	a.aging, a.freed = a.freed, a.aging[:0]
}

// kept returns the bytes of capacity the allocator keeps.
func (a *batchAllocator) kept() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}
