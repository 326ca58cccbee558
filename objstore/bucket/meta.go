package bucket

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"

	"github.com/floe-lake/floe/objstore/sse"
)

const (
	// xattrName holds an object's metadata (JSON, see meta).
	xattrName = "user.floe.s3"
	// maxXattr bounds the metadata read back from a file.
	maxXattr = 16 << 10
	// maxUserMeta is the S3 limit on user metadata (keys plus values).
	maxUserMeta = 2 << 10
	// defaultContentType is what S3 reports when none was given.
	defaultContentType = "binary/octet-stream"
)

// meta is the metadata stored in the xattr. Size and MTime are the file's
// on-disk size and modification time when the metadata was written: a file
// rewritten in place by another program no longer matches them, and its
// metadata is then ignored.
type meta struct {
	V           int               `json:"v"`
	ETag        string            `json:"etag"` // unquoted
	ContentType string            `json:"ct,omitempty"`
	User        map[string]string `json:"um,omitempty"`
	Encrypted   bool              `json:"enc,omitempty"`
	Checksums   map[string]string `json:"ck,omitempty"`
	Size        int64             `json:"sz"`
	MTime       int64             `json:"mt"`
}

// withFd runs fn with f's descriptor without changing its blocking mode.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// readMeta returns the metadata xattr of f, or nil if there is none (or the
// file system has no xattrs).
func readMeta(f *os.File) (*meta, error) {
	var m *meta
	err := withFd(f, func(fd int) error {
		buf := make([]byte, 1024)
		for {
			n, err := unix.Fgetxattr(fd, xattrName, buf)
			if errors.Is(err, unix.ERANGE) && len(buf) < maxXattr {
				buf = make([]byte, maxXattr)
				continue
			}
			if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ERANGE) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read metadata of %s: %w", f.Name(), err)
			}
			var mm meta
			if json.Unmarshal(buf[:n], &mm) == nil && mm.V == 1 {
				m = &mm
			}
			return nil
		}
	})
	return m, err
}

// writeMeta stores m on f. When the file system does not support xattrs it
// logs once and returns nil: the object is still stored, and its metadata is
// derived when read.
func (s *Store) writeMeta(f *os.File, m *meta) error {
	if s.noXattr.Load() {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode metadata: %w", err)
	}
	return withFd(f, func(fd int) error {
		err := unix.Fsetxattr(fd, xattrName, b, 0)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.ENOTSUP):
			if !s.noXattr.Swap(true) {
				s.log.Warn("bucket store: file system has no user xattrs; content types, user metadata and checksums are not kept",
					"dir", s.tempDir)
			}
			return nil
		case errors.Is(err, unix.E2BIG) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ERANGE):
			return errorf(CodeMetadataTooLarge, "object metadata is too large for the file system (%d bytes)", len(b))
		default:
			return fmt.Errorf("write metadata: %w", err)
		}
	})
}

// checkUserMeta enforces the S3 size limit on user metadata.
func checkUserMeta(um map[string]string) error {
	n := 0
	for k, v := range um {
		n += len(k) + len(v)
	}
	if n > maxUserMeta {
		return errorf(CodeMetadataTooLarge, "user metadata is %d bytes; the limit is %d", n, maxUserMeta)
	}
	return nil
}

// fileInfo describes an open object file.
type fileInfo struct {
	info     ObjectInfo
	diskSize int64
	hasMeta  bool // info came from the xattr (not derived)
}

// statObject builds the ObjectInfo of the object file f. It fails with
// NoSuchKey when f is not a regular file (a directory, for example).
func (s *Store) statObject(f *os.File, bucket, key string) (fileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileInfo{}, fmt.Errorf("stat %s/%s: %w", bucket, key, err)
	}
	if !fi.Mode().IsRegular() {
		return fileInfo{}, noSuchKey(bucket, key)
	}
	size, mtime := fi.Size(), fi.ModTime()
	out := fileInfo{diskSize: size, info: ObjectInfo{
		Bucket: bucket, Key: key, LastModified: mtime.UTC(), ContentType: defaultContentType,
	}}
	m, err := readMeta(f)
	if err != nil {
		return fileInfo{}, err
	}
	if m != nil && m.Size == size && m.MTime == mtime.UnixNano() {
		out.hasMeta = true
		out.info.ETag = `"` + m.ETag + `"`
		if m.ContentType != "" {
			out.info.ContentType = m.ContentType
		}
		out.info.UserMetadata = m.User
		out.info.Checksums = m.Checksums
		out.info.Encrypted = m.Encrypted
	} else {
		out.info.ETag = fallbackETag(size, mtime)
		if out.info.Encrypted, err = sniffEncrypted(f, size); err != nil {
			return fileInfo{}, err
		}
	}
	out.info.Size = size
	if out.info.Encrypted {
		if out.info.Size, err = sse.PlaintextSize(size); err != nil {
			return fileInfo{}, fmt.Errorf("object %s/%s: %w", bucket, key, err)
		}
	}
	return out, nil
}

// sniffEncrypted reports whether f starts with the encryption header magic.
func sniffEncrypted(f *os.File, size int64) (bool, error) {
	var prefix [16]byte
	n := int64(len(prefix))
	if size < n {
		n = size
	}
	if _, err := f.ReadAt(prefix[:n], 0); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return sse.IsEncrypted(prefix[:n]), nil
}

// fallbackETag is the ETag of a file without metadata: a hash of its size
// and modification time (it changes whenever the file does).
func fallbackETag(size int64, mtime time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(size))
	binary.BigEndian.PutUint64(b[8:], uint64(mtime.UnixNano()))
	return quoteHash(xxh3.Hash128(b[:]))
}

// hashHex is the 32-character hex form of a 128-bit hash.
func hashHex(h xxh3.Uint128) string {
	b := h.Bytes()
	return hex.EncodeToString(b[:])
}

func quoteHash(h xxh3.Uint128) string { return `"` + hashHex(h) + `"` }

func noSuchKey(bucket, key string) *Error {
	return errorf(CodeNoSuchKey, "the key %q does not exist in bucket %q", key, bucket)
}

// errno extracts the syscall.Errno in err's chain (0 if none).
func errno(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}
