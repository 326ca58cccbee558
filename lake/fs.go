package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/objstore/bucket"
)

// BucketFS is an iceberg-go FileIO over Floe's embedded object store, for
// locations s3://<bucket>/<key> (also s3a:// and s3n://). Objects are
// encrypted at rest when the store encrypts. Writes stream into the store
// (no whole-file buffer) and are published atomically on Close; reads are
// ranged, so Parquet readers fetch only the column chunks they need.
type BucketFS struct {
	s *bucket.Store
}

// Interface guards.
var (
	_ icebergio.WriteFileIO = (*BucketFS)(nil)
	_ icebergio.ReadFileIO  = (*BucketFS)(nil)
	_ icebergio.StatIO      = (*BucketFS)(nil)
	_ icebergio.ListableIO  = (*BucketFS)(nil)
)

// NewBucketFS returns the FileIO of the embedded object store s.
func NewBucketFS(s *bucket.Store) *BucketFS { return &BucketFS{s: s} }

// object splits a location into bucket and key.
func (f *BucketFS) object(op, name string) (string, string, error) {
	b, k, err := objstore.ParseLocation(name)
	if err != nil {
		return "", "", &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%w: %w", fs.ErrInvalid, err)}
	}
	if k == "" {
		return "", "", &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%w: the location names no object", fs.ErrInvalid)}
	}
	return b, k, nil
}

// pathError wraps a store error as iceberg-go expects: a *fs.PathError that
// matches fs.ErrNotExist for a missing object.
func pathError(op, name string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, bucket.ErrNoSuchKey) || errors.Is(err, bucket.ErrNoSuchBucket) {
		err = fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open opens an object for reading.
func (f *BucketFS) Open(name string) (icebergio.File, error) {
	b, k, err := f.object("open", name)
	if err != nil {
		return nil, err
	}
	info, err := f.s.Head(context.Background(), b, k, bucket.GetOptions{})
	if err != nil {
		return nil, pathError("open", name, err)
	}
	return &bucketFile{s: f.s, name: name, info: info}, nil
}

// ReadFile returns a whole object.
func (f *BucketFS) ReadFile(name string) ([]byte, error) {
	b, k, err := f.object("read", name)
	if err != nil {
		return nil, err
	}
	obj, err := f.s.Get(context.Background(), b, k, bucket.GetOptions{})
	if err != nil {
		return nil, pathError("read", name, err)
	}
	defer obj.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, obj.Info.Size))
	if _, err := io.Copy(buf, obj.Body); err != nil {
		return nil, pathError("read", name, err)
	}
	return buf.Bytes(), nil
}

// Stat describes an object.
func (f *BucketFS) Stat(name string) (fs.FileInfo, error) {
	b, k, err := f.object("stat", name)
	if err != nil {
		return nil, err
	}
	info, err := f.s.Head(context.Background(), b, k, bucket.GetOptions{})
	if err != nil {
		return nil, pathError("stat", name, err)
	}
	return fileInfo{name: path.Base(k), info: info}, nil
}

// Remove deletes an object; a missing object is not an error.
func (f *BucketFS) Remove(name string) error {
	b, k, err := f.object("remove", name)
	if err != nil {
		return err
	}
	return pathError("remove", name, f.s.Delete(context.Background(), b, k))
}

// WriteFile atomically writes (or replaces) an object.
func (f *BucketFS) WriteFile(name string, p []byte) error {
	b, k, err := f.object("write", name)
	if err != nil {
		return err
	}
	_, err = f.s.Put(context.Background(), b, k, bytes.NewReader(p), bucket.PutOptions{Size: int64(len(p)), ContentType: contentType(k)})
	return pathError("write", name, err)
}

// WalkDir calls fn for every object under root (a location s3://bucket/prefix,
// taken as a directory: s3://b/t lists s3://b/t/... but not s3://b/t2/...),
// in key order, with its full location; directories are not reported. It
// lists page by page, so memory does not grow with the number of objects.
// Orphan-file removal uses it.
func (f *BucketFS) WalkDir(root string, fn fs.WalkDirFunc) error {
	b, prefix, err := objstore.ParseLocation(root)
	if err != nil {
		return &fs.PathError{Op: "walk", Path: root, Err: fmt.Errorf("%w: %w", fs.ErrInvalid, err)}
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	scheme := root[:strings.Index(root, "://")+3]
	opts := bucket.ListOptions{Prefix: prefix}
	for {
		page, err := f.s.List(context.Background(), b, opts)
		if err != nil {
			return pathError("walk", root, err)
		}
		for _, o := range page.Objects {
			loc := scheme + b + "/" + o.Key
			if err := fn(loc, fs.FileInfoToDirEntry(fileInfo{name: path.Base(o.Key), info: o}), nil); err != nil {
				if errors.Is(err, fs.SkipAll) || errors.Is(err, fs.SkipDir) {
					return nil
				}
				return err
			}
		}
		if !page.IsTruncated {
			return nil
		}
		opts.ContinuationToken = page.NextContinuationToken
	}
}

// Create returns a writer that streams into a new object. The object
// appears, whole, when the writer is closed; a failed write leaves nothing.
func (f *BucketFS) Create(name string) (icebergio.FileWriter, error) {
	b, k, err := f.object("create", name)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	w := &bucketWriter{name: name, pw: pw, done: make(chan error, 1)}
	go func() {
		_, err := f.s.Put(context.Background(), b, k, pr, bucket.PutOptions{Size: -1, ContentType: contentType(k)})
		if err != nil {
			pr.CloseWithError(err) // the writer's next Write fails with err
		} else {
			_ = pr.Close()
		}
		w.done <- err
	}()
	return w, nil
}

// contentType is the media type stored with an object Floe writes.
func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".parquet"):
		return "application/vnd.apache.parquet"
	case strings.HasSuffix(key, ".avro"):
		return "application/avro"
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	}
	return "application/octet-stream"
}

// bucketWriter feeds a Put running in its own goroutine through a pipe.
type bucketWriter struct {
	name   string
	pw     *io.PipeWriter
	done   chan error
	once   sync.Once
	result error
}

// Write streams p into the object.
func (w *bucketWriter) Write(p []byte) (int, error) {
	n, err := w.pw.Write(p)
	if err != nil {
		return n, pathError("write", w.name, err)
	}
	return n, nil
}

// ReadFrom streams r into the object.
func (w *bucketWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(w.pw, r)
	if err != nil {
		return n, pathError("write", w.name, err)
	}
	return n, nil
}

// Close ends the object and waits until the store has published it.
func (w *bucketWriter) Close() error {
	w.once.Do(func() {
		_ = w.pw.Close()
		w.result = pathError("write", w.name, <-w.done)
	})
	return w.result
}

// bucketFile is an object open for reading. ReadAt issues a ranged read
// (conditional on the ETag seen at Open, so a replaced object is noticed);
// Read streams from the current offset.
type bucketFile struct {
	s    *bucket.Store
	name string
	info bucket.ObjectInfo

	mu     sync.Mutex
	off    int64         // offset of the next Read
	body   io.ReadCloser // open stream for Read, positioned at bodyAt
	bodyAt int64
}

// Stat describes the object as it was when it was opened.
func (f *bucketFile) Stat() (fs.FileInfo, error) {
	return fileInfo{name: path.Base(f.info.Key), info: f.info}, nil
}

// ReadAt reads len(p) bytes at off (fewer, with io.EOF, at the end).
func (f *bucketFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= f.info.Size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.info.Size-off)
	if n == 0 {
		return 0, nil
	}
	obj, err := f.s.Get(context.Background(), f.info.Bucket, f.info.Key, bucket.GetOptions{
		Range: fmt.Sprintf("bytes=%d-%d", off, off+n-1), IfMatch: f.info.ETag})
	if err != nil {
		return 0, pathError("read", f.name, err)
	}
	defer obj.Body.Close()
	got, err := io.ReadFull(obj.Body, p[:n])
	if err != nil {
		return got, pathError("read", f.name, err)
	}
	if got < len(p) {
		return got, io.EOF
	}
	return got, nil
}

// Read reads from the current offset.
func (f *bucketFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off >= f.info.Size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.body == nil || f.bodyAt != f.off {
		f.closeBody()
		obj, err := f.s.Get(context.Background(), f.info.Bucket, f.info.Key, bucket.GetOptions{
			Range: fmt.Sprintf("bytes=%d-", f.off), IfMatch: f.info.ETag})
		if err != nil {
			return 0, pathError("read", f.name, err)
		}
		f.body, f.bodyAt = obj.Body, f.off
	}
	n, err := f.body.Read(p)
	f.off += int64(n)
	f.bodyAt = f.off
	if err == io.EOF {
		f.closeBody()
		if f.off < f.info.Size {
			return n, pathError("read", f.name, io.ErrUnexpectedEOF)
		}
		if n > 0 {
			err = nil
		}
	} else if err != nil {
		f.closeBody()
		err = pathError("read", f.name, err)
	}
	return n, err
}

// Seek sets the offset of the next Read.
func (f *bucketFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.info.Size
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	f.off = offset
	return offset, nil
}

// Close releases the open stream, if any.
func (f *bucketFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeBody()
	return nil
}

func (f *bucketFile) closeBody() {
	if f.body != nil {
		_ = f.body.Close()
		f.body = nil
	}
}

// fileInfo describes an object as an fs.FileInfo.
type fileInfo struct {
	name string
	info bucket.ObjectInfo
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.info.Size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return i.info.LastModified }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return i.info }
