package bucket

import (
	"context"
	"errors"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/floe-lake/floe/objstore/sse"
)

// Range is an inclusive byte range of an object's plaintext.
type Range struct{ Start, End int64 }

// ParseRange parses an HTTP Range header ("bytes=a-b", "bytes=a-",
// "bytes=-n") against an object of size bytes. ok is false when there is no
// range to apply: no header, a syntax error, another unit, several ranges
// (S3 serves the whole object then), or a suffix range of an empty object.
// err is InvalidRange (416) when the range cannot be satisfied.
func ParseRange(header string, size int64) (r Range, ok bool, err error) {
	const unit = "bytes="
	if len(header) < len(unit) || !strings.EqualFold(header[:len(unit)], unit) {
		return Range{}, false, nil
	}
	spec := strings.TrimSpace(header[len(unit):])
	if strings.Contains(spec, ",") {
		return Range{}, false, nil
	}
	first, last, found := strings.Cut(spec, "-")
	if !found {
		return Range{}, false, nil
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	unsatisfiable := func() (Range, bool, error) {
		return Range{}, false, errorf(CodeInvalidRange, "the range %q is not satisfiable for an object of %d bytes",
			header, size)
	}
	if first == "" { // suffix: the last n bytes
		n, ok := parseUint(last)
		switch {
		case !ok:
			return Range{}, false, nil
		case n == 0:
			return unsatisfiable()
		case size == 0:
			return Range{}, false, nil
		}
		return Range{Start: max(size-n, 0), End: size - 1}, true, nil
	}
	a, ok := parseUint(first)
	if !ok {
		return Range{}, false, nil
	}
	end := size - 1
	if last != "" {
		b, ok := parseUint(last)
		if !ok || b < a {
			return Range{}, false, nil
		}
		end = min(b, size-1)
	}
	if a >= size {
		return unsatisfiable()
	}
	return Range{Start: a, End: end}, true, nil
}

// parseUint parses a non-empty run of ASCII digits.
func parseUint(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// GetOptions are the options of Get and Head: a Range header and the
// conditional request headers.
type GetOptions struct {
	Range                              string
	IfMatch, IfNoneMatch               string
	IfModifiedSince, IfUnmodifiedSince time.Time
}

// Object is an open object. The caller must close Body.
type Object struct {
	Info ObjectInfo
	// Body yields the requested bytes (plaintext). For a plaintext object it
	// implements io.WriterTo handing an *io.LimitedReader over the *os.File
	// to the destination, so io.Copy to an http.ResponseWriter (or a
	// *net.TCPConn) uses sendfile(2).
	Body  io.ReadCloser
	Range *Range // nil = whole object
}

// Get opens bucket/key for reading. Failed conditions return NotModified
// (304) or PreconditionFailed (412); an unsatisfiable range InvalidRange.
func (s *Store) Get(ctx context.Context, bucket, key string, o GetOptions) (_ *Object, err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "object.get")
		span.SetAttributes(attrBucket.String(bucket))
		defer func() { spans.End(span, err) }()
	}
	b, err := s.lookup(bucket, key)
	if err != nil {
		return nil, err
	}
	if err := ctxErr(ctx, "get"); err != nil {
		return nil, err
	}
	f, fi, err := s.openObject(b, key)
	if err != nil {
		return nil, err
	}
	obj, err := s.openBody(ctx, f, fi, o)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return obj, nil
}

func (s *Store) openBody(ctx context.Context, f *os.File, fi fileInfo, o GetOptions) (*Object, error) {
	if err := checkConditions(fi.info, o); err != nil {
		return nil, err
	}
	obj := &Object{Info: fi.info}
	off, n := int64(0), fi.info.Size
	if o.Range == "" && n >= sequentialHint {
		// A whole large object is read front to back: ask for aggressive
		// readahead (the data files engines scan are usually not cached).
		adviseSequential(f)
	}
	r, ok, err := ParseRange(o.Range, fi.info.Size)
	if err != nil {
		return nil, err
	}
	if ok {
		obj.Range = &r
		off, n = r.Start, r.End-r.Start+1
	}
	if !fi.info.Encrypted {
		if off > 0 {
			if _, err := f.Seek(off, io.SeekStart); err != nil {
				return nil, fmt.Errorf("seek %s: %w", fi.info.Key, err)
			}
		}
		obj.Body = &fileBody{f: f, n: n, s: s}
		return obj, nil
	}
	rr, err := s.plainReader(ctx, f, fi, off, n)
	if err != nil {
		return nil, err
	}
	obj.Body = &cryptBody{f: f, r: rr, s: s}
	return obj, nil
}

// Head returns the object's info, checking the conditions as Get does.
func (s *Store) Head(ctx context.Context, bucket, key string, o GetOptions) (_ ObjectInfo, err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "object.head")
		span.SetAttributes(attrBucket.String(bucket))
		defer func() { spans.End(span, err) }()
	}
	b, err := s.lookup(bucket, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := ctxErr(ctx, "head"); err != nil {
		return ObjectInfo{}, err
	}
	f, fi, err := s.openObject(b, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	_ = f.Close()
	if err := checkConditions(fi.info, o); err != nil {
		return ObjectInfo{}, err
	}
	return fi.info, nil
}

// headFile returns the info of b/key (key already validated).
func (s *Store) headFile(b *bucketRoot, key string) (ObjectInfo, error) {
	f, fi, err := s.openObject(b, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	_ = f.Close()
	return fi.info, nil
}

// openObject opens the file of b/key (key already validated) and reads its
// info. Missing files, directories, special files and paths that leave the
// root through a symbolic link are all NoSuchKey.
//
// An object missing from the bucket root is looked for in the cold tier,
// which MoveToCold fills before it removes the root's copy, so a reader
// finds the object in one or the other throughout a move.
func (s *Store) openObject(b *bucketRoot, key string) (*os.File, fileInfo, error) {
	f, err := b.root.OpenFile(filePath(key), os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil && b.cold != nil && (isNotExist(err) || errno(err) == unix.EISDIR) {
		f, err = b.cold.root.OpenFile(filePath(key), os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	}
	if err != nil {
		if isNotExist(err) || errno(err) == unix.EISDIR {
			return nil, fileInfo{}, noSuchKey(b.name, key)
		}
		return nil, fileInfo{}, fmt.Errorf("open %s/%s: %w", b.name, key, err)
	}
	fi, err := s.statObject(f, b.name, key)
	if err != nil {
		_ = f.Close()
		return nil, fileInfo{}, err
	}
	return f, fi, nil
}

// plainReader returns a reader of the plaintext bytes [off, off+n) of the
// open object f.
func (s *Store) plainReader(ctx context.Context, f *os.File, fi fileInfo, off, n int64) (io.Reader, error) {
	if !fi.info.Encrypted {
		return io.NewSectionReader(f, off, n), nil
	}
	if s.enc == nil {
		return nil, fmt.Errorf("object %s/%s is encrypted but no encryption key is configured", fi.info.Bucket, fi.info.Key)
	}
	r, err := sse.Open(ctx, f, fi.diskSize, s.enc)
	if err != nil {
		return nil, fmt.Errorf("decrypt %s/%s: %w", fi.info.Bucket, fi.info.Key, err)
	}
	return r.NewRangeReader(off, n), nil
}

// checkConditions evaluates the conditional headers in RFC 9110 order.
// Dates compare at one-second resolution, as HTTP dates have.
func checkConditions(info ObjectInfo, o GetOptions) error {
	mod := info.LastModified.Truncate(time.Second)
	if o.IfMatch != "" {
		if !etagMatch(o.IfMatch, info.ETag) {
			return errorf(CodePreconditionFailed, "If-Match %s does not match ETag %s", o.IfMatch, info.ETag)
		}
	} else if !o.IfUnmodifiedSince.IsZero() && mod.After(o.IfUnmodifiedSince) {
		return errorf(CodePreconditionFailed, "the object was modified since %s", o.IfUnmodifiedSince.UTC().Format(time.RFC1123))
	}
	if o.IfNoneMatch != "" {
		if etagMatch(o.IfNoneMatch, info.ETag) {
			return errorf(CodeNotModified, "the object matches If-None-Match")
		}
	} else if !o.IfModifiedSince.IsZero() && !mod.After(o.IfModifiedSince) {
		return errorf(CodeNotModified, "the object was not modified since %s", o.IfModifiedSince.UTC().Format(time.RFC1123))
	}
	return nil
}

// etagMatch reports whether the If-Match / If-None-Match list matches etag.
// "*" matches any object; quotes and the weak prefix are ignored.
func etagMatch(list, etag string) bool {
	etag = strings.Trim(etag, `"`)
	for c := range strings.SplitSeq(list, ",") {
		c = strings.TrimSpace(c)
		if c == "*" {
			return true
		}
		c = strings.Trim(strings.TrimPrefix(c, "W/"), `"`)
		if c != "" && c == etag {
			return true
		}
	}
	return false
}

// fileBody reads n bytes of a plaintext object file from its current offset.
type fileBody struct {
	f *os.File
	n int64 // bytes left
	s *Store
}

// Read implements io.Reader.
func (b *fileBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.f.Read(p)
	b.n -= int64(n)
	if errors.Is(err, io.EOF) && b.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// WriteTo implements io.WriterTo. A destination with ReadFrom gets an
// *io.LimitedReader over the *os.File, which net.TCPConn and os.File turn
// into sendfile(2) or copy_file_range(2); others get 256 KiB writes.
func (b *fileBody) WriteTo(w io.Writer) (int64, error) {
	lr := &io.LimitedReader{R: b.f, N: b.n}
	var n int64
	var err error
	if _, ok := w.(io.ReaderFrom); ok {
		n, err = io.Copy(w, lr)
	} else {
		bp := b.s.getBuf()
		n, err = io.CopyBuffer(w, lr, *bp)
		b.s.putBuf(bp)
	}
	b.n = lr.N
	if err == nil && b.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close implements io.Closer.
func (b *fileBody) Close() error { return b.f.Close() }

// cryptBody reads decrypted bytes of an encrypted object.
type cryptBody struct {
	f *os.File
	r io.Reader
	s *Store
}

// Read implements io.Reader.
func (b *cryptBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// WriteTo implements io.WriterTo with 256 KiB writes. Decryption runs
// ahead in a goroutine (see readAhead), so that decrypting the next
// segments overlaps sending the previous ones.
func (b *cryptBody) WriteTo(w io.Writer) (int64, error) {
	chunks, recycle, stop := b.s.readAhead(b.r)
	defer stop()
	var n int64
	for c := range chunks {
		var werr error
		if c.n > 0 {
			var m int
			m, werr = w.Write((*c.buf)[:c.n])
			n += int64(m)
		}
		recycle(c.buf)
		switch {
		case werr != nil:
			return n, werr
		case c.err == io.EOF || c.err == io.ErrUnexpectedEOF:
			return n, nil
		case c.err != nil:
			return n, c.err
		}
	}
	return n, nil
}

// Close implements io.Closer.
func (b *cryptBody) Close() error { return b.f.Close() }

// writerOnly hides optional interfaces (ReadFrom) of a writer.
type writerOnly struct{ io.Writer }

// readerOnly hides optional interfaces (WriteTo) of a reader.
type readerOnly struct{ io.Reader }

// attrBucket is the bucket of an object.* span. Keys are not recorded: a
// partition value in a path may be data.
const attrBucket = attribute.Key("floe.bucket")
