package bucket

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to begin writing [off, off+n) of f to
// disk without waiting for it (sync_file_range SYNC_FILE_RANGE_WRITE); it
// is only a hint, so errors are ignored: the later fsync is what counts.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// adviseSequential hints that f will be read front to back (a larger
// readahead window); errors are ignored, it is only advice.
func adviseSequential(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_SEQUENTIAL)
}
