package bucket

import "os"

// writeBehindWindow is how much a staging file may accumulate in dirty
// pages before Floe asks the kernel to start writing it out.
const writeBehindWindow = 8 << 20

// writeBehind wraps a staging file: every writeBehindWindow bytes it starts
// writeback of the window just written (without waiting), so the disk
// works while the rest of the upload still arrives and the fsync that
// publishes the object has little left to do.
type writeBehind struct {
	f       *os.File
	off     int64 // bytes written so far
	flushed int64 // writeback started up to here
}

func (w *writeBehind) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if w.off-w.flushed >= writeBehindWindow {
		startWriteback(w.f, w.flushed, w.off-w.flushed)
		w.flushed = w.off
	}
	return n, err
}

// sequentialHint is the object size from which a whole-object GET tells
// the kernel it will read sequentially.
const sequentialHint = 4 << 20
