package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/objstore"
)

// FileIO adapts a Store to catalog.FileIO and catalog.Stater for locations
// "s3://bucket/key" (also "s3a://" and "s3n://"), so the catalog writes
// metadata through the same engine external clients use (encrypted when the
// store encrypts). Keys are taken literally (no URL decoding), as Iceberg
// writes them. Errors are Floe domain errors (NotFound, Invalid, ...)
// wrapping the store's *Error.
type FileIO struct{ s *Store }

// Interface guards.
var (
	_ catalog.FileIO = (*FileIO)(nil)
	_ catalog.Stater = (*FileIO)(nil)
	_ catalog.Lister = (*FileIO)(nil)
)

// FileIO returns the catalog adapter of s.
func (s *Store) FileIO() *FileIO { return &FileIO{s: s} }

func (f *FileIO) object(location string) (bucket, key string, err error) {
	bucket, key, err = objstore.ParseLocation(location)
	if err != nil {
		return "", "", err
	}
	if key == "" {
		return "", "", floe.E(floe.Invalid, "", "location %q names no object", location)
	}
	return bucket, key, nil
}

// ReadFile returns the whole object; NotFound if it does not exist.
func (f *FileIO) ReadFile(ctx context.Context, location string) ([]byte, error) {
	bucket, key, err := f.object(location)
	if err != nil {
		return nil, err
	}
	obj, err := f.s.Get(ctx, bucket, key, GetOptions{})
	if err != nil {
		return nil, toFloe(err)
	}
	defer obj.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, obj.Info.Size))
	if _, err := io.Copy(buf, obj.Body); err != nil {
		return nil, fmt.Errorf("read %s: %w", location, err)
	}
	return buf.Bytes(), nil
}

// WriteFile atomically writes (or replaces) an object.
func (f *FileIO) WriteFile(ctx context.Context, location string, data []byte) error {
	bucket, key, err := f.object(location)
	if err != nil {
		return err
	}
	o := PutOptions{Size: int64(len(data))}
	if strings.HasSuffix(key, ".json") {
		o.ContentType = "application/json"
	}
	_, err = f.s.Put(ctx, bucket, key, bytes.NewReader(data), o)
	return toFloe(err)
}

// Delete removes one object; a missing object is not an error.
func (f *FileIO) Delete(ctx context.Context, location string) error {
	bucket, key, err := f.object(location)
	if err != nil {
		return err
	}
	return toFloe(f.s.Delete(ctx, bucket, key))
}

// DeletePrefix removes every object under prefix, taken as a "directory":
// "s3://b/t" removes "t/…" but not "t2". The bucket root cannot be removed.
func (f *FileIO) DeletePrefix(ctx context.Context, prefix string) error {
	bucket, key, err := objstore.ParseLocation(prefix)
	if err != nil {
		return err
	}
	key = strings.TrimRight(key, "/")
	if key == "" {
		return floe.E(floe.Forbidden, "", "refusing to delete the whole bucket %q", bucket)
	}
	return toFloe(f.s.deletePrefix(ctx, bucket, key+"/"))
}

// Exists reports whether an object exists. The catalog asks on every
// table load, so a regular file is answered by one stat, without opening
// it; anything else takes the full Head path.
func (f *FileIO) Exists(ctx context.Context, location string) (bool, error) {
	bucket, key, err := f.object(location)
	if err != nil {
		return false, err
	}
	if b, err := f.s.lookup(bucket, key); err == nil {
		// A plain stat of the validated key's path (no "..", no leading
		// "/"): far cheaper than os.Root's component-wise walk. It only
		// answers "exists"; every read still goes through the os.Root.
		if fi, err := os.Lstat(filepath.Join(b.dir, filepath.FromSlash(filePath(key)))); err == nil && fi.Mode().IsRegular() {
			return true, nil
		}
	}
	_, err = f.s.Head(ctx, bucket, key, GetOptions{})
	if errors.Is(err, ErrNoSuchKey) {
		return false, nil
	}
	return err == nil, toFloe(err)
}

// HasObjects reports whether any object lies under prefix taken as a
// "directory" ("s3://b/t" covers "t/…" but not "t2"), listing at most one
// key. The bucket root is never empty for this purpose.
func (f *FileIO) HasObjects(ctx context.Context, prefix string) (bool, error) {
	bucket, key, err := objstore.ParseLocation(prefix)
	if err != nil {
		return false, err
	}
	key = strings.TrimRight(key, "/")
	if key == "" {
		return true, nil
	}
	res, err := f.s.List(ctx, bucket, ListOptions{Prefix: key + "/", MaxKeys: 1})
	if errors.Is(err, ErrNoSuchBucket) {
		return false, nil
	}
	if err != nil {
		return false, toFloe(err)
	}
	return len(res.Objects) > 0, nil
}
