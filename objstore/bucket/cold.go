package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The cold tier (Options.ColdDir) is a second directory tree per bucket,
// <ColdDir>/<bucket>, laid out like the bucket root. MoveToCold moves an
// object there; Get, Head, Copy and the FileIO fall back to it when the
// object is not in the bucket root, List merges both trees, and Delete
// removes the key from both. An object never exists only half-moved: it is
// staged in <ColdDir>/.floe-staging (hard link when both trees share a file
// system, else a full copy with its metadata and modification time, fsynced),
// renamed into the cold tree, and only then removed from the bucket root.
// A crash leaves it in the root, or in both trees (the root's copy wins, and
// moving again finishes the move), never in neither.

// ErrNoColdTier is returned by MoveToCold when the store has no cold tier.
var ErrNoColdTier = errors.New("bucket store: no cold tier is configured")

// coldStagingName is the staging directory inside ColdDir.
const coldStagingName = reservedPrefix + "staging"

// openCold opens the cold tier in dir for every bucket and returns the
// staging directory handle.
func (s *Store) openCold(dir string) error {
	cold, dev, err := prepareDir(dir)
	if err != nil {
		return fmt.Errorf("bucket store: cold dir: %w", err)
	}
	for _, name := range s.names {
		b := s.buckets[name]
		if rel, err := filepath.Rel(b.dir, cold); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if first, _, _ := strings.Cut(rel, "/"); !strings.HasPrefix(first, reservedPrefix) {
				return fmt.Errorf("bucket store: cold dir %s is inside bucket %s; put it outside or under a %q* directory",
					cold, name, reservedPrefix)
			}
		}
		cd, cdev, err := prepareDir(filepath.Join(cold, name))
		if err != nil {
			return fmt.Errorf("bucket store: cold dir of bucket %s: %w", name, err)
		}
		if cdev != dev {
			return fmt.Errorf("bucket store: cold dir of bucket %s (%s) is not on the file system of %s; "+
				"an atomic move needs a rename", name, cd, cold)
		}
		root, err := os.OpenRoot(cd)
		if err != nil {
			return fmt.Errorf("bucket store: cold dir of bucket %s: %w", name, err)
		}
		b.cold = &bucketRoot{name: name, dir: cd, root: root}
	}
	stg := filepath.Join(cold, coldStagingName)
	if err := os.MkdirAll(stg, 0o750); err != nil {
		return fmt.Errorf("bucket store: cold dir: %w", err)
	}
	if s.coldStaging, err = os.Open(stg); err != nil {
		return fmt.Errorf("bucket store: cold dir: %w", err)
	}
	s.cleanColdStaging()
	return nil
}

// cleanColdStaging removes staging files of interrupted moves older than
// staleAfter (the object is still in its bucket root).
func (s *Store) cleanColdStaging() {
	entries, err := s.coldStaging.ReadDir(-1)
	if err != nil {
		s.log.Warn("bucket store: cannot list cold staging directory", "dir", s.coldStaging.Name(), "err", err)
		return
	}
	cutoff := s.now().Add(-staleAfter)
	for _, e := range entries {
		// Linked staging files keep the object's (old) mtime: the name
		// says when the move began.
		if !staleMoveName(e.Name(), cutoff) {
			continue
		}
		if err := withFd(s.coldStaging, func(fd int) error { return unix.Unlinkat(fd, e.Name(), 0) }); err != nil {
			s.log.Warn("bucket store: cannot remove stale cold staging file", "name", e.Name(), "err", err)
		}
	}
}

// moveName is the staging name of a move: "move-<unix nanos>-<n>".
func (s *Store) moveName() string {
	return fmt.Sprintf("move-%d-%d", s.now().UnixNano(), s.moveSeq.Add(1))
}

// staleMoveName reports whether the staging file name was made before
// cutoff (names the store does not make are left alone).
func staleMoveName(name string, cutoff time.Time) bool {
	var ns, n int64
	if _, err := fmt.Sscanf(name, "move-%d-%d", &ns, &n); err != nil {
		return false
	}
	return time.Unix(0, ns).Before(cutoff)
}

// ColdDir returns the directory of bucket's cold tier, or "" when the store
// has no cold tier or no such bucket.
func (s *Store) ColdDir(bucket string) string {
	if b, ok := s.buckets[bucket]; ok && b.cold != nil {
		return b.cold.dir
	}
	return ""
}

// Dirs returns the directories that hold bucket's object files: its root
// and, with a cold tier, its cold directory.
func (s *Store) Dirs(bucket string) []string {
	b, ok := s.buckets[bucket]
	if !ok {
		return nil
	}
	if b.cold == nil {
		return []string{b.dir}
	}
	return []string{b.dir, b.cold.dir}
}

// ObjectPath returns the file that holds bucket/key: in the bucket root, or
// in the cold tier if it has moved there. The file holds the object as
// stored (encrypted when ObjectInfo.Encrypted). NoSuchKey if neither has it.
func (s *Store) ObjectPath(bucket, key string) (string, error) {
	b, err := s.lookup(bucket, key)
	if err != nil {
		return "", err
	}
	for _, r := range []*bucketRoot{b, b.cold} {
		if r == nil {
			continue
		}
		if fi, err := r.root.Stat(filePath(key)); err == nil && fi.Mode().IsRegular() {
			return filepath.Join(r.dir, filepath.FromSlash(filePath(key))), nil
		}
	}
	return "", noSuchKey(bucket, key)
}

// IsCold reports whether bucket/key is stored in the cold tier (and not in
// the bucket root).
func (s *Store) IsCold(bucket, key string) (bool, error) {
	b, err := s.lookup(bucket, key)
	if err != nil {
		return false, err
	}
	if b.cold == nil {
		return false, nil
	}
	if fi, err := b.root.Stat(filePath(key)); err == nil && fi.Mode().IsRegular() {
		return false, nil
	}
	fi, err := b.cold.root.Stat(filePath(key))
	return err == nil && fi.Mode().IsRegular(), nil
}

// MoveToCold moves bucket/key from the bucket root to the cold tier, with
// its bytes (encrypted ones as they are), metadata and modification time, so
// its ETag does not change. Readers see the object throughout: in the root
// until the cold copy is in place, then in the cold tier; one that has the
// file open keeps reading it. An object already cold is left alone;
// NoSuchKey if it is in neither tier. If a writer replaces the object while
// it is being moved, the move is abandoned with PreconditionFailed.
func (s *Store) MoveToCold(ctx context.Context, bucket, key string) error {
	b, err := s.lookup(bucket, key)
	if err != nil {
		return err
	}
	if b.cold == nil {
		return ErrNoColdTier
	}
	if strings.HasSuffix(key, "/") {
		return errorf(CodeInvalidArgument, "folder marker %q stays in the bucket root", key)
	}
	if err := ctxErr(ctx, "move to cold"); err != nil {
		return err
	}
	dir, base := splitPath(key)
	f, err := b.root.OpenFile(key, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		if isNotExist(err) || errno(err) == unix.EISDIR {
			if cold, _ := s.IsCold(bucket, key); cold {
				return nil
			}
			return noSuchKey(bucket, key)
		}
		return fmt.Errorf("move %s/%s to cold: %w", bucket, key, err)
	}
	defer f.Close()
	src, err := f.Stat()
	if err != nil {
		return fmt.Errorf("move %s/%s to cold: %w", bucket, key, err)
	}
	if !src.Mode().IsRegular() {
		return noSuchKey(bucket, key)
	}
	name := s.moveName()
	staged := false
	defer func() {
		if staged {
			_ = withFd(s.coldStaging, func(fd int) error { return unix.Unlinkat(fd, name, 0) })
		}
	}()
	if err := s.stageCold(ctx, b, key, f, src, name); err != nil {
		return fmt.Errorf("move %s/%s to cold: %w", bucket, key, err)
	}
	staged = true

	unlock := s.lock(bucket, key)
	defer unlock()
	// Publishes take the same lock: if the root still holds the file we
	// copied, nothing can replace it until we are done.
	if cur, err := b.root.Lstat(key); err != nil || !os.SameFile(cur, src) {
		return errorf(CodePreconditionFailed, "the object %q was replaced or deleted while it was moved to the cold tier", key)
	}
	cd, err := s.openDir(b.cold, key, dir)
	if err != nil {
		return fmt.Errorf("move %s/%s to cold: %w", bucket, key, err)
	}
	err = withFd(s.coldStaging, func(sfd int) error {
		return withFd(cd, func(fd int) error { return unix.Renameat(sfd, name, fd, base) })
	})
	if err == nil {
		staged = false
		err = cd.Sync()
	}
	_ = cd.Close()
	if err != nil {
		return fmt.Errorf("move %s/%s to cold: publish: %w", bucket, key, err)
	}
	hd, err := b.root.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("move %s/%s to cold: %w", bucket, key, err)
	}
	err = withFd(hd, func(fd int) error { return unix.Unlinkat(fd, base, 0) })
	if err == nil {
		err = hd.Sync()
	}
	_ = hd.Close()
	if err != nil && errno(err) != unix.ENOENT {
		// The cold copy is in place; the root's copy still wins. Moving
		// again finishes the move.
		return fmt.Errorf("move %s/%s to cold: remove from the bucket root: %w", bucket, key, err)
	}
	s.prune(b, dir)
	return nil
}

// stageCold puts a copy of the open object file f (stat src) into the cold
// staging directory as name: a hard link when the root and the cold tier
// share a file system, else a copy of the bytes, the metadata xattr and the
// modification time, fsynced.
func (s *Store) stageCold(ctx context.Context, b *bucketRoot, key string, f *os.File, src os.FileInfo, name string) error {
	if s.forceCopy {
		return s.copyCold(ctx, f, src, name)
	}
	dir, base := splitPath(key)
	d, err := b.root.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	err = withFd(d, func(dfd int) error {
		return withFd(s.coldStaging, func(sfd int) error { return unix.Linkat(dfd, base, sfd, name, 0) })
	})
	_ = d.Close()
	if err == nil {
		// The path may have been replaced between our open and the link.
		var st unix.Stat_t
		serr := withFd(s.coldStaging, func(sfd int) error { return unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
		if serr == nil && sameInode(src, st) {
			return nil
		}
		_ = withFd(s.coldStaging, func(sfd int) error { return unix.Unlinkat(sfd, name, 0) })
		if serr != nil {
			return serr
		}
		return errorf(CodePreconditionFailed, "the object %q was replaced while it was moved to the cold tier", key)
	}
	if errno(err) != unix.EXDEV && errno(err) != unix.EPERM && errno(err) != unix.EMLINK {
		return err
	}
	return s.copyCold(ctx, f, src, name)
}

// copyCold copies the open object file f into the cold staging directory
// as name, with its metadata xattr and modification time, and fsyncs it.
func (s *Store) copyCold(ctx context.Context, f *os.File, src os.FileInfo, name string) (err error) {
	var out *os.File
	err = withFd(s.coldStaging, func(sfd int) error {
		fd, err := unix.Openat(sfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o640)
		if err != nil {
			return err
		}
		out = os.NewFile(uintptr(fd), filepath.Join(s.coldStaging.Name(), name))
		return nil
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if err := ctxErr(ctx, "move to cold"); err != nil {
		return err
	}
	// io.Copy between two *os.File uses copy_file_range(2).
	n, err := io.Copy(out, io.NewSectionReader(f, 0, src.Size()))
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if n != src.Size() {
		return fmt.Errorf("copy: %d of %d bytes", n, src.Size())
	}
	if err := copyXattr(f, out); err != nil {
		return err
	}
	mt := unix.NsecToTimespec(src.ModTime().UnixNano())
	if err := withFd(out, func(fd int) error {
		return unix.UtimesNanoAt(fd, "", []unix.Timespec{mt, mt}, unix.AT_EMPTY_PATH)
	}); err != nil {
		// AT_EMPTY_PATH needs Linux 5.8 for utimensat; fall back to the path.
		if err := withFd(s.coldStaging, func(sfd int) error {
			return unix.UtimesNanoAt(sfd, name, []unix.Timespec{mt, mt}, unix.AT_SYMLINK_NOFOLLOW)
		}); err != nil {
			return fmt.Errorf("set modification time: %w", err)
		}
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// copyXattr copies the metadata xattr from src to dst, if src has one.
func copyXattr(src, dst *os.File) error {
	var val []byte
	err := withFd(src, func(fd int) error {
		buf := make([]byte, maxXattr)
		n, err := unix.Fgetxattr(fd, xattrName, buf)
		if err != nil {
			return err
		}
		val = buf[:n]
		return nil
	})
	switch {
	case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP):
		return nil
	case err != nil:
		return fmt.Errorf("read metadata: %w", err)
	}
	err = withFd(dst, func(fd int) error { return unix.Fsetxattr(fd, xattrName, val, 0) })
	if err != nil && !errors.Is(err, unix.ENOTSUP) {
		return fmt.Errorf("write metadata: %w", err)
	}
	return nil
}

// sameInode reports whether st is the file fi describes.
func sameInode(fi os.FileInfo, st unix.Stat_t) bool {
	sys, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(sys.Dev) == uint64(st.Dev) && uint64(sys.Ino) == uint64(st.Ino) //nolint:unconvert // types differ by platform
}
