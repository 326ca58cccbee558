package bucket

import (
	"context"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Delete removes bucket/key, from the bucket root and the cold tier. A
// missing key is not an error. Directories left empty are removed, up to
// (not including) the bucket root.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	b, err := s.lookup(bucket, key)
	if err != nil {
		return err
	}
	if err := ctxErr(ctx, "delete"); err != nil {
		return err
	}
	unlock := s.lock(bucket, key)
	defer unlock()
	if err := s.unlink(b, key); err != nil {
		return err
	}
	if b.cold != nil {
		return s.unlink(b.cold, key)
	}
	return nil
}

// unlink removes the file of key (already validated) from b's tree, if it
// is there, and prunes the directories it leaves empty. The caller holds
// the key's lock.
func (s *Store) unlink(b *bucketRoot, key string) error {
	dir, base := splitPath(filePath(key))
	d, err := b.root.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("delete %s/%s: %w", b.name, key, err)
	}
	err = withFd(d, func(fd int) error { return unix.Unlinkat(fd, base, 0) })
	if err == nil {
		err = d.Sync()
	}
	_ = d.Close()
	switch errno(err) {
	case 0:
	case unix.ENOENT, unix.EISDIR, unix.ENOTDIR:
		return nil // no such object (a "directory" is not one)
	default:
		return fmt.Errorf("delete %s/%s: %w", b.name, key, err)
	}
	s.prune(b, dir)
	return nil
}

// prune removes dir and its parents while they are empty. It only ever
// removes directories (rmdir semantics), so a concurrent Put that created
// a file there is never harmed; one that is about to rename into a removed
// directory retries (see publish).
func (s *Store) prune(b *bucketRoot, dir string) {
	for dir != "." && dir != "" {
		parent, base := splitPath(dir)
		d, err := b.root.OpenFile(parent, os.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return
		}
		err = withFd(d, func(fd int) error { return unix.Unlinkat(fd, base, unix.AT_REMOVEDIR) })
		_ = d.Close()
		if err != nil {
			if e := errno(err); e != unix.ENOTEMPTY && e != unix.EEXIST && e != unix.ENOENT {
				s.log.Debug("bucket store: cannot prune directory", "bucket", b.name, "dir", dir, "err", err)
			}
			return
		}
		dir = parent
	}
}

// deletePrefix removes every object whose key starts with prefix, which
// must end in "/" (a directory). It then prunes empty parents.
func (s *Store) deletePrefix(ctx context.Context, bucket, prefix string) error {
	if !strings.HasSuffix(prefix, "/") {
		return errorf(CodeInvalidArgument, "prefix %q does not end in \"/\"", prefix)
	}
	b, err := s.lookup(bucket, prefix)
	if err != nil {
		return err
	}
	if err := ctxErr(ctx, "delete prefix"); err != nil {
		return err
	}
	if err := s.removeDir(b, prefix); err != nil {
		return err
	}
	if b.cold != nil {
		return s.removeDir(b.cold, prefix)
	}
	return nil
}

// removeDir removes the directory prefix (ending in "/") from b's tree and
// prunes its empty parents.
func (s *Store) removeDir(b *bucketRoot, prefix string) error {
	dir := strings.TrimSuffix(prefix, "/")
	fi, err := b.root.Lstat(dir)
	switch {
	case err != nil && isNotExist(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete prefix %s/%s: %w", b.name, prefix, err)
	case !fi.IsDir():
		return nil
	}
	if err := b.root.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete prefix %s/%s: %w", b.name, prefix, err)
	}
	parent, _ := splitPath(dir)
	s.prune(b, parent)
	return nil
}
