package bucket

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Content-MD5 is an integrity check the client asks for, not a security boundary.
	"errors"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/trace"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"

	"github.com/floe-lake/floe/objstore/sse"
)

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Bucket, Key  string
	Size         int64  // plaintext bytes
	ETag         string // quoted, e.g. "\"9f…\"" or "\"9f…-3\"" for multipart
	LastModified time.Time
	ContentType  string
	UserMetadata map[string]string // x-amz-meta-* without the prefix
	Encrypted    bool              // stored encrypted at rest
	Checksums    map[string]string // e.g. "crc32": base64, as recorded at upload
}

// PutOptions are the options of Put, Copy, CreateMultipart and
// CompleteMultipart.
type PutOptions struct {
	ContentType  string
	UserMetadata map[string]string // at most 2 KiB of keys plus values
	// IfNoneMatch "*" creates only: PreconditionFailed if the key exists
	// (atomic, also against other processes: the file is published with
	// link(2)). An ETag list fails if the current object matches.
	IfNoneMatch string
	// IfMatch replaces only an object whose ETag matches (NoSuchKey if
	// there is none). Atomic against writers in this process.
	IfMatch string
	// ContentMD5, if set, is checked against the body: BadDigest if it
	// differs.
	ContentMD5 []byte
	// Checksums are recorded as given (the S3 layer verifies them).
	Checksums map[string]string
	// Size is the declared body size, or -1 if unknown. A shorter body
	// fails with IncompleteBody, a longer one with InvalidArgument.
	Size int64
}

// staged is a file being written in the staging directory.
type staged struct {
	f    *os.File // nil once sealed
	path string
	name string // base name in the staging directory
	size int64  // plaintext bytes
	hash xxh3.Uint128
	md5  []byte
	done bool // published or removed
}

// newStaged creates an empty staging file; kind names it for humans.
func (s *Store) newStaged(kind string) (*staged, error) {
	f, err := os.CreateTemp(filepath.Join(s.tempDir, stagingSub), kind+"-*")
	if err != nil {
		return nil, fmt.Errorf("create staging file: %w", err)
	}
	return &staged{f: f, path: f.Name(), name: filepath.Base(f.Name())}, nil
}

// discard removes the staging file unless it was published.
func (st *staged) discard() {
	if st == nil || st.done {
		return
	}
	st.done = true
	if st.f != nil {
		_ = st.f.Close()
	}
	_ = os.Remove(st.path)
}

// stage streams body into a new staging file (encrypted when the store
// encrypts), hashing the plaintext. want >= 0 is the exact size expected.
func (s *Store) stage(ctx context.Context, kind string, body io.Reader, want int64, contentMD5 []byte) (*staged, error) {
	st, err := s.newStaged(kind)
	if err != nil {
		return nil, err
	}
	if err := s.fill(ctx, st, body, want, contentMD5); err != nil {
		st.discard()
		return nil, err
	}
	return st, nil
}

func (s *Store) fill(ctx context.Context, st *staged, body io.Reader, want int64, contentMD5 []byte) error {
	var w io.Writer = &writeBehind{f: st.f}
	var ew io.WriteCloser
	if s.enc != nil {
		var err error
		if ew, err = sse.NewWriter(ctx, w, s.enc); err != nil {
			return fmt.Errorf("encrypt: %w", err)
		}
		w = ew
	}
	var mh hash.Hash
	if contentMD5 != nil {
		mh = md5.New() //nolint:gosec // see import
	}
	h := xxh3.New128()
	if want >= 0 {
		body = io.LimitReader(body, want+1)
	}
	chunks, recycle, stop := s.readAhead(body)
	defer stop()
	var n int64
	for c := range chunks {
		if err := ctxErr(ctx, "upload"); err != nil {
			recycle(c.buf)
			return err
		}
		if c.n > 0 {
			chunk := (*c.buf)[:c.n]
			_, _ = h.Write(chunk)
			if mh != nil {
				_, _ = mh.Write(chunk)
			}
			if _, err := w.Write(chunk); err != nil {
				recycle(c.buf)
				return fmt.Errorf("write staging file: %w", err)
			}
			n += int64(c.n)
		}
		recycle(c.buf)
		if c.err == io.EOF || c.err == io.ErrUnexpectedEOF {
			break
		}
		if c.err != nil {
			return readErr(c.err)
		}
	}
	if ew != nil {
		if err := ew.Close(); err != nil {
			return fmt.Errorf("encrypt: %w", err)
		}
	}
	switch {
	case want >= 0 && n < want:
		return errorf(CodeIncompleteBody, "the body has %d bytes; %d were declared", n, want)
	case want >= 0 && n > want:
		return errorf(CodeInvalidArgument, "the body is longer than the declared %d bytes", want)
	}
	st.size, st.hash = n, h.Sum128()
	if mh != nil {
		st.md5 = mh.Sum(nil)
		if !bytes.Equal(st.md5, contentMD5) {
			return errorf(CodeBadDigest, "the Content-MD5 you specified did not match what we received")
		}
	}
	return nil
}

// readChunk is one buffer of an upload read ahead of the writer.
type readChunk struct {
	buf *[]byte
	n   int
	err error // io.EOF or io.ErrUnexpectedEOF at the end, or a read error
}

// readAheadBufs is how many buffers one upload cycles through: one being
// read into, one being written, one waiting.
const readAheadBufs = 3

// readAhead reads body in a goroutine into a few pooled buffers, so that
// receiving the next part of an upload overlaps hashing, encrypting and
// writing the previous one (two cores instead of one). The consumer hands
// each buffer back with recycle once it is done with it. The channel closes
// after the chunk that carries the end or an error; stop (call it when
// done, also early) makes the reader exit after its current read returns.
func (s *Store) readAhead(body io.Reader) (chunks <-chan readChunk, recycle func(*[]byte), stop func()) {
	ch := make(chan readChunk, readAheadBufs)
	free := make(chan *[]byte, readAheadBufs)
	for range readAheadBufs {
		free <- s.getBuf()
	}
	done := make(chan struct{})
	go func() {
		defer close(ch)
		for {
			var bp *[]byte
			select {
			case bp = <-free:
			case <-done:
				return
			}
			m, err := io.ReadFull(body, *bp)
			select {
			case ch <- readChunk{buf: bp, n: m, err: err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var once sync.Once
	recycle = func(bp *[]byte) {
		select {
		case free <- bp:
		default:
		}
	}
	stop = func() {
		once.Do(func() {
			close(done)
			// Give back the buffers that are idle; the reader's current
			// one, if any, is left to the garbage collector.
			for {
				select {
				case bp := <-free:
					s.putBuf(bp)
				default:
					return
				}
			}
		})
	}
	return ch, recycle, stop
}

// readErr keeps client-visible errors from the body (for example a
// checksum or signature failure raised by a verifying reader) and wraps the
// rest.
func readErr(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("read request body: %w", err)
}

// seal records m on the staging file (completing its size and mtime),
// flushes it to disk and closes it.
func (s *Store) seal(st *staged, m *meta) error {
	fi, err := st.f.Stat()
	if err != nil {
		return fmt.Errorf("stat staging file: %w", err)
	}
	m.V, m.Size, m.MTime = 1, fi.Size(), fi.ModTime().UnixNano()
	if err := s.writeMeta(st.f, m); err != nil {
		return err
	}
	if err := st.f.Sync(); err != nil {
		return fmt.Errorf("sync staging file: %w", err)
	}
	err = st.f.Close()
	st.f = nil
	if err != nil {
		return fmt.Errorf("close staging file: %w", err)
	}
	return nil
}

// Put stores body as bucket/key, atomically: readers see the old object or
// the new one, never part of one.
func (s *Store) Put(ctx context.Context, bucket, key string, body io.Reader, o PutOptions) (_ ObjectInfo, err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "object.put")
		span.SetAttributes(attrBucket.String(bucket))
		defer func() { spans.End(span, err) }()
	}
	b, err := s.lookup(bucket, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := checkUserMeta(o.UserMetadata); err != nil {
		return ObjectInfo{}, err
	}
	st, err := s.stage(ctx, "put", body, o.Size, o.ContentMD5)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer st.discard()
	m := &meta{ETag: hashHex(st.hash), ContentType: o.ContentType, User: o.UserMetadata,
		Encrypted: s.enc != nil, Checksums: o.Checksums}
	return s.commit(ctx, b, key, st, m, o)
}

// commit seals st with m and publishes it as b/key under o's conditions.
func (s *Store) commit(ctx context.Context, b *bucketRoot, key string, st *staged, m *meta, o PutOptions) (ObjectInfo, error) {
	if err := s.seal(st, m); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctxErr(ctx, "put"); err != nil {
		return ObjectInfo{}, err
	}
	if err := s.publish(b, key, st, o.IfMatch, o.IfNoneMatch); err != nil {
		return ObjectInfo{}, err
	}
	info := ObjectInfo{Bucket: b.name, Key: key, Size: st.size, ETag: `"` + m.ETag + `"`,
		LastModified: time.Unix(0, m.MTime).UTC(), ContentType: m.ContentType, UserMetadata: m.User,
		Encrypted: m.Encrypted, Checksums: m.Checksums}
	if s.noXattr.Load() {
		// Report what a later Head will derive.
		info.ETag, info.ContentType, info.UserMetadata, info.Checksums = fallbackETag(m.Size, info.LastModified), "", nil, nil
	}
	if info.ContentType == "" {
		info.ContentType = defaultContentType
	}
	return info, nil
}

// publish moves the sealed staging file st to b/key. With ifNoneMatch "*"
// it links (failing if the key exists, atomically even against other
// processes); otherwise it renames over any existing object. Other
// conditions are checked under the key's lock, so they are atomic against
// writers in this process only.
func (s *Store) publish(b *bucketRoot, key string, st *staged, ifMatch, ifNoneMatch string) error {
	dir, base := splitPath(filePath(key))
	unlock := s.lock(b.name, key)
	defer unlock()
	if ifMatch != "" || ifNoneMatch != "" && ifNoneMatch != "*" {
		cur, err := s.headFile(b, key)
		switch {
		case err != nil && ifMatch != "":
			return err
		case err != nil && !errors.Is(err, ErrNoSuchKey):
			return err
		case ifMatch != "" && !etagMatch(ifMatch, cur.ETag):
			return errorf(CodePreconditionFailed, "If-Match %s does not match the current ETag of %q", ifMatch, key)
		case err == nil && ifNoneMatch != "" && etagMatch(ifNoneMatch, cur.ETag):
			return errorf(CodePreconditionFailed, "If-None-Match %s matches the current ETag of %q", ifNoneMatch, key)
		}
	}
	if ifNoneMatch == "*" && b.cold != nil {
		if fi, err := b.cold.root.Stat(filePath(key)); err == nil && fi.Mode().IsRegular() {
			return errorf(CodePreconditionFailed, "the key %q already exists (If-None-Match: *)", key)
		}
	}
	for attempt := 0; ; attempt++ {
		d, err := s.openDir(b, key, dir)
		if err != nil {
			return err
		}
		err = withFd(s.staging, func(sfd int) error {
			return withFd(d, func(fd int) error {
				if ifNoneMatch == "*" {
					return unix.Linkat(sfd, st.name, fd, base, 0)
				}
				return unix.Renameat(sfd, st.name, fd, base)
			})
		})
		if err == nil {
			err = d.Sync()
		}
		_ = d.Close()
		switch e := errno(err); {
		case err == nil:
			if ifNoneMatch == "*" {
				_ = os.Remove(st.path)
			}
			st.done = true
			if b.cold != nil {
				// The new object replaces a cold copy, if any.
				if err := s.unlink(b.cold, key); err != nil {
					s.log.Warn("bucket store: cannot remove the replaced cold copy", "bucket", b.name, "key", key, "err", err)
				}
			}
			return nil
		case e == unix.ENOENT && attempt < 8:
			// A concurrent Delete pruned the (then empty) directory
			// between our open and the rename: create it again.
			continue
		case e == unix.EEXIST && ifNoneMatch == "*":
			if fi, serr := b.root.Lstat(filePath(key)); serr == nil && fi.IsDir() {
				return dirConflict(key)
			}
			return errorf(CodePreconditionFailed, "the key %q already exists (If-None-Match: *)", key)
		case e == unix.EISDIR || e == unix.ENOTEMPTY || e == unix.EEXIST:
			return dirConflict(key)
		default:
			return fmt.Errorf("publish %s/%s: %w", b.name, key, err)
		}
	}
}

func dirConflict(key string) *Error {
	return errorf(CodeKeyConflict, "cannot store %q: other keys start with %q and objects are stored as files, "+
		"so a key cannot also be a prefix (\"directory\") of other keys", key, strings.TrimSuffix(key, "/")+"/")
}

func parentConflict(key string) *Error {
	return errorf(CodeKeyConflict, "cannot store %q: a prefix of it (up to a \"/\") is already an object, and objects "+
		"are stored as files, so an object cannot also be a \"directory\" of other keys", key)
}

// openDir opens directory dir (relative to b's root) for key, creating it
// and its parents if missing.
func (s *Store) openDir(b *bucketRoot, key, dir string) (*os.File, error) {
	for i := 0; ; i++ {
		d, err := b.root.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
		switch {
		case err == nil:
			return d, nil
		case isEscape(err) || errno(err) == unix.ELOOP:
			return nil, errorf(CodeInvalidArgument, "the path of key %q leaves the bucket (symbolic link)", key)
		case errno(err) == unix.ENOTDIR && (i >= 8 || fileOnPath(b.root, dir)):
			return nil, parentConflict(key)
		case (errno(err) == unix.ENOENT || errno(err) == unix.ENOTDIR) && i >= 8:
			return nil, err
		case errno(err) != unix.ENOENT && errno(err) != unix.ENOTDIR:
			return nil, fmt.Errorf("open %s/%s: %w", b.name, dir, err)
		}
		err = b.root.MkdirAll(dir, 0o750)
		if err == nil {
			err = syncParents(b.root, dir)
		}
		switch e := errno(err); {
		case err == nil || e == unix.ENOENT:
			// Created, or a concurrent prune removed a parent we had
			// just created: try again.
		case (e == unix.ENOTDIR || e == unix.EEXIST) && (i >= 8 || fileOnPath(b.root, dir)):
			return nil, parentConflict(key)
		case e == unix.ENOTDIR || e == unix.EEXIST:
			// A concurrent Delete pruned a directory while MkdirAll was
			// checking it: try again.
		case isEscape(err):
			return nil, errorf(CodeInvalidArgument, "the path of key %q leaves the bucket (symbolic link)", key)
		default:
			return nil, fmt.Errorf("create %s/%s: %w", b.name, dir, err)
		}
	}
}

// fileOnPath reports whether dir or one of its parents is a file (an
// object), as opposed to a directory that a concurrent prune removed.
func fileOnPath(r *os.Root, dir string) bool {
	for dir != "." && dir != "" {
		if fi, err := r.Lstat(dir); err == nil && !fi.IsDir() {
			return true
		}
		dir, _ = splitPath(dir)
	}
	return false
}

// syncParents fsyncs every directory from the parent of dir up to the
// root, so that directories MkdirAll just created survive a crash.
func syncParents(r *os.Root, dir string) error {
	for dir != "." && dir != "" {
		dir, _ = splitPath(dir)
		if err := syncDir(r, dir); err != nil {
			return err
		}
	}
	return nil
}

// Copy copies srcBucket/srcKey to dstBucket/dstKey. The destination gets o's
// content type and user metadata, or the source's when o.ContentType is ""
// and o.UserMetadata is nil (S3's COPY directive; pass a non-nil empty map
// to REPLACE with none). Checksums are the source's unless o.Checksums is
// set. o.IfMatch/IfNoneMatch apply to the destination.
func (s *Store) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, o PutOptions) (ObjectInfo, error) {
	return s.CopyIf(ctx, srcBucket, srcKey, GetOptions{}, dstBucket, dstKey, o)
}

// CopyIf is Copy with conditions on the source (x-amz-copy-source-if-*):
// a failed condition is PreconditionFailed (never NotModified). src.Range
// is ignored.
func (s *Store) CopyIf(ctx context.Context, srcBucket, srcKey string, src GetOptions, dstBucket, dstKey string,
	o PutOptions) (ObjectInfo, error) {
	sb, err := s.lookup(srcBucket, srcKey)
	if err != nil {
		return ObjectInfo{}, err
	}
	db, err := s.lookup(dstBucket, dstKey)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := checkUserMeta(o.UserMetadata); err != nil {
		return ObjectInfo{}, err
	}
	f, fi, err := s.openObject(sb, srcKey)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer f.Close()
	if err := checkConditions(fi.info, src); err != nil {
		if errors.Is(err, ErrNotModified) {
			return ObjectInfo{}, errorf(CodePreconditionFailed, "x-amz-copy-source-if-none-match / -if-modified-since failed")
		}
		return ObjectInfo{}, err
	}
	m := &meta{ContentType: o.ContentType, User: o.UserMetadata, Checksums: o.Checksums, Encrypted: s.enc != nil}
	if o.ContentType == "" && o.UserMetadata == nil {
		m.ContentType, m.User = fi.info.ContentType, fi.info.UserMetadata
	}
	if o.Checksums == nil {
		m.Checksums = fi.info.Checksums
	}
	st, err := s.newStaged("copy")
	if err != nil {
		return ObjectInfo{}, err
	}
	defer st.discard()
	if h, ok := contentHash(fi.info.ETag); ok && !fi.info.Encrypted && s.enc == nil && fi.hasMeta {
		// Same bytes, no transformation: let the kernel copy
		// (copy_file_range from the file's offset 0) and keep the ETag.
		n, err := io.Copy(st.f, &io.LimitedReader{R: f, N: fi.diskSize})
		if err == nil && n != fi.diskSize {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return ObjectInfo{}, fmt.Errorf("copy %s/%s: %w", srcBucket, srcKey, err)
		}
		st.size, m.ETag = n, h
	} else {
		r, err := s.plainReader(ctx, f, fi, 0, fi.info.Size)
		if err != nil {
			return ObjectInfo{}, err
		}
		if err := s.fill(ctx, st, r, fi.info.Size, nil); err != nil {
			return ObjectInfo{}, err
		}
		m.ETag = hashHex(st.hash)
	}
	return s.commit(ctx, db, dstKey, st, m, o)
}

// contentHash returns the unquoted ETag if it is a plain content hash (not
// a multipart "-N" ETag).
func contentHash(etag string) (string, bool) {
	h := strings.Trim(etag, `"`)
	return h, len(h) == 32 && !strings.Contains(h, "-")
}
