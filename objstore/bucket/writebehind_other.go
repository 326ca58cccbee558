//go:build !linux

package bucket

import "os"

// startWriteback is a no-op where sync_file_range does not exist; the
// fsync that publishes an object still makes it durable.
func startWriteback(*os.File, int64, int64) {}

// adviseSequential is a no-op without posix_fadvise.
func adviseSequential(*os.File) {}
