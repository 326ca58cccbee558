// Package local is a storage backend over a local directory: locations are
// file:// URIs (or bare absolute paths) inside a root directory. Writes are
// atomic (temporary file, fsync, rename, fsync of the directory), so readers
// never see part of an object and a crash leaves none.
package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/floe-lake/floe"
)

// FS is a local file store confined to Root.
type FS struct {
	root string
}

// New returns a store confined to root (created if missing).
func New(root string) (*FS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("local store root: %w", err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("local store root: %w", err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("local store root: %w", err)
	}
	return &FS{root: abs}, nil
}

// Root returns the absolute root directory.
func (f *FS) Root() string { return f.root }

// URI returns the file:// URI of the root.
func (f *FS) URI() string { return "file://" + filepath.ToSlash(f.root) }

// Path maps a location to a file path inside the root, or fails with Invalid.
func (f *FS) Path(location string) (string, error) {
	p := location
	if strings.HasPrefix(location, "file:") {
		u, err := url.Parse(location)
		if err != nil {
			return "", floe.E(floe.Invalid, "", "bad location %q", location)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", floe.E(floe.Invalid, "", "location %q names a remote host", location)
		}
		p = u.Path
	} else if strings.Contains(location, "://") {
		return "", floe.E(floe.Invalid, "", "location %q is not a local file", location)
	}
	if !filepath.IsAbs(p) {
		return "", floe.E(floe.Invalid, "", "location %q is not absolute", location)
	}
	p = filepath.Clean(p)
	if p != f.root && !strings.HasPrefix(p, f.root+string(filepath.Separator)) {
		return "", floe.E(floe.Forbidden, "", "location %q is outside the warehouse root", location)
	}
	return p, nil
}

// ReadFile reads a whole file.
func (f *FS) ReadFile(_ context.Context, location string) ([]byte, error) {
	p, err := f.Path(location)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &floe.Error{Kind: floe.NotFound, Entity: "file", Msg: "no such file: " + location, Err: err}
	}
	return b, err
}

// Exists reports whether a file exists.
func (f *FS) Exists(_ context.Context, location string) (bool, error) {
	p, err := f.Path(location)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// WriteFile writes data atomically; an existing file is replaced.
func (f *FS) WriteFile(_ context.Context, location string, data []byte) error {
	p, err := f.Path(location)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("write %s: %w", location, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(p)+"."+uuid.NewString()+".tmp")
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("write %s: %w", location, err)
	}
	_, werr := fh.Write(data)
	if werr == nil {
		werr = fh.Sync()
	}
	if cerr := fh.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, p)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", location, werr)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Delete removes one file; a missing file is not an error.
func (f *FS) Delete(_ context.Context, location string) error {
	p, err := f.Path(location)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", location, err)
	}
	return nil
}

// DeletePrefix removes a directory tree (never the root itself).
func (f *FS) DeletePrefix(_ context.Context, prefix string) error {
	p, err := f.Path(prefix)
	if err != nil {
		return err
	}
	if p == f.root {
		return floe.E(floe.Forbidden, "", "refusing to delete the warehouse root")
	}
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("delete %s: %w", prefix, err)
	}
	return nil
}
