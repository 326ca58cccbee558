package bucket

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/trace"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// MaxListKeys is the largest (and default) page size of List.
const MaxListKeys = 1000

// ListOptions select the keys List returns (ListObjectsV2 semantics).
type ListOptions struct {
	Prefix, Delimiter string
	// StartAfter lists keys after this one; ignored when ContinuationToken
	// is set.
	StartAfter string
	// ContinuationToken is NextContinuationToken of the previous page.
	ContinuationToken string
	// MaxKeys bounds objects plus common prefixes (default and maximum 1000).
	MaxKeys int
}

// ListResult is one page of keys in S3 (byte-wise lexicographic) order.
type ListResult struct {
	Objects               []ObjectInfo
	CommonPrefixes        []string
	IsTruncated           bool
	NextContinuationToken string
	KeyCount              int // len(Objects) + len(CommonPrefixes)
}

// List returns one page of the bucket's keys. It walks the directory tree
// in key order, one directory's entries in memory per level, descending
// only into directories that can hold keys under Prefix and after the
// start key; with a Delimiter, a directory whose keys all share one common
// prefix is reported without being walked. Symbolic links, special files,
// reserved names and file names that are not valid keys are not listed.
//
// With a cold tier, both trees are listed and merged: an object that is in
// both (during a move) is listed once, with the bucket root's info.
func (s *Store) List(ctx context.Context, bucket string, o ListOptions) (_ ListResult, err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "object.list")
		span.SetAttributes(attrBucket.String(bucket))
		defer func() { spans.End(span, err) }()
	}
	b, err := s.bucket(bucket)
	if err != nil {
		return ListResult{}, err
	}
	after, limit := o.StartAfter, o.MaxKeys
	if limit <= 0 || limit > MaxListKeys {
		limit = MaxListKeys
	}
	if o.ContinuationToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(o.ContinuationToken)
		if err != nil || !utf8.Valid(raw) {
			return ListResult{}, errorf(CodeInvalidArgument, "the continuation token provided is incorrect")
		}
		after = string(raw)
	}
	res, err := s.listTree(ctx, b, o.Prefix, o.Delimiter, after, limit)
	if err != nil || b.cold == nil {
		return res, err
	}
	cold, err := s.listTree(ctx, b.cold, o.Prefix, o.Delimiter, after, limit)
	if err != nil {
		return ListResult{}, err
	}
	if cold.KeyCount == 0 && !cold.IsTruncated {
		return res, nil
	}
	return mergeLists(res, cold, limit), nil
}

// listTree lists one page of the keys of one tree (a bucket root or its
// cold tier) after the key after.
func (s *Store) listTree(ctx context.Context, b *bucketRoot, prefix, delim, after string, limit int) (ListResult, error) {
	l := &lister{s: s, b: b, ctx: ctx, prefix: prefix, delim: delim, after: after, max: limit}
	if len(l.prefix) > MaxKeyLen {
		return ListResult{}, nil
	}
	// Start in the deepest directory the prefix names.
	startDir := l.prefix[:strings.LastIndexByte(l.prefix, '/')+1]
	if startDir != "" && ValidateKey(startDir) != nil {
		return ListResult{}, nil // no key can have this prefix
	}
	open := "."
	if startDir != "" {
		open = strings.TrimSuffix(startDir, "/")
	}
	rd, err := b.root.OpenFile(open, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		if isNotExist(err) {
			return ListResult{}, nil
		}
		return ListResult{}, fmt.Errorf("list %s: %w", b.name, err)
	}
	// Reopen outside the Root: ReadDir on a file opened through an
	// os.Root lstats every entry, while a plain one uses d_type.
	d, err := openDirAt(rd, ".")
	_ = rd.Close()
	if err != nil {
		return ListResult{}, fmt.Errorf("list %s: %w", b.name, err)
	}
	err = l.walk(d, startDir)
	_ = d.Close()
	if err != nil && !errors.Is(err, errStop) {
		return ListResult{}, err
	}
	res := l.res
	res.KeyCount = len(res.Objects) + len(res.CommonPrefixes)
	if res.IsTruncated {
		res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(l.last))
	}
	return res, nil
}

// listItem is an object (info != nil) or a common prefix of a page.
type listItem struct {
	key  string
	info *ObjectInfo
}

// items returns the objects and common prefixes of r in key order.
func (r ListResult) items() []listItem {
	out := make([]listItem, 0, r.KeyCount)
	i, j := 0, 0
	for i < len(r.Objects) || j < len(r.CommonPrefixes) {
		if j == len(r.CommonPrefixes) || i < len(r.Objects) && r.Objects[i].Key < r.CommonPrefixes[j] {
			out = append(out, listItem{key: r.Objects[i].Key, info: &r.Objects[i]})
			i++
		} else {
			out = append(out, listItem{key: r.CommonPrefixes[j]})
			j++
		}
	}
	return out
}

// mergeLists merges the pages of the same listing from the bucket root
// (hot) and the cold tier into one page of at most limit entries. A key in
// both is listed once, with hot's info. A page that was truncated only
// covers keys up to its last one, so the merged page stops there too.
func mergeLists(hot, cold ListResult, limit int) ListResult {
	a, b := hot.items(), cold.items()
	// Keys after the last key of a truncated page may miss entries of
	// that page's tree: stop at the lowest such key.
	var bound string
	bounded := false
	for _, p := range []struct {
		items     []listItem
		truncated bool
	}{{a, hot.IsTruncated}, {b, cold.IsTruncated}} {
		if p.truncated && len(p.items) > 0 {
			if k := p.items[len(p.items)-1].key; !bounded || k < bound {
				bound, bounded = k, true
			}
		}
	}
	var out ListResult
	n := 0
	add := func(it listItem) bool {
		if bounded && it.key > bound || n == limit {
			out.IsTruncated = true
			return false
		}
		n++
		if it.info != nil {
			out.Objects = append(out.Objects, *it.info)
		} else {
			out.CommonPrefixes = append(out.CommonPrefixes, it.key)
		}
		return true
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var it listItem
		switch {
		case j == len(b) || i < len(a) && a[i].key < b[j].key:
			it = a[i]
			i++
		case i == len(a) || b[j].key < a[i].key:
			it = b[j]
			j++
		default: // in both: the root's copy wins
			it = a[i]
			i++
			j++
		}
		if !add(it) {
			break
		}
	}
	if hot.IsTruncated || cold.IsTruncated {
		out.IsTruncated = true
	}
	out.KeyCount = len(out.Objects) + len(out.CommonPrefixes)
	if out.IsTruncated {
		last := ""
		if len(out.Objects) > 0 {
			last = out.Objects[len(out.Objects)-1].Key
		}
		if k := len(out.CommonPrefixes); k > 0 && out.CommonPrefixes[k-1] > last {
			last = out.CommonPrefixes[k-1]
		}
		out.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(last))
	}
	return out
}

// errStop ends a walk early (page full).
var errStop = errors.New("stop")

type lister struct {
	s             *Store
	b             *bucketRoot
	ctx           context.Context
	prefix, delim string
	after         string // only keys (and common prefixes) > after
	max           int
	res           ListResult
	n             int    // entries in res
	last          string // last key or common prefix returned
	lastCP        string
	steps         int
}

// entry is a directory entry; sk is its sort key: the name, plus "/" for
// a directory, so that entries sort as the keys they hold do.
type entry struct {
	name, sk string
	dir      bool
}

// readEntries returns the entries of d that can be (or hold) keys and
// pass keep, sorted in key order, and whether d holds a folder marker.
func readEntries(d *os.File, keep func(entry) bool) ([]entry, bool, error) {
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, false, fmt.Errorf("read directory: %w", err)
	}
	out := make([]entry, 0, len(des))
	marker := false
	for _, de := range des {
		name, t := de.Name(), de.Type()
		if strings.HasPrefix(name, reservedPrefix) {
			marker = marker || name == dirMarker && t.IsRegular()
			continue
		}
		if !t.IsDir() && !t.IsRegular() || !validSegment(name) {
			continue
		}
		e := entry{name: name, sk: name, dir: t.IsDir()}
		if e.dir {
			e.sk += "/"
		}
		if keep(e) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.sk, b.sk) })
	return out, marker, nil
}

// validSegment reports whether a file name can be a key segment.
func validSegment(name string) bool {
	return name != "." && name != ".." && len(name) <= maxSegmentLen && utf8.ValidString(name) &&
		!strings.ContainsAny(name, "\\\x00")
}

// walk lists the keys under directory d, whose keys start with dirPrefix.
func (l *lister) walk(d *os.File, dirPrefix string) error {
	// Drop entries that hold only keys before the prefix or <= after
	// before sorting: paging through a big directory then sorts only what
	// is left.
	entries, marker, err := readEntries(d, func(e entry) bool {
		// full = dirPrefix + e.sk, compared without building it.
		if e.dir {
			return (catCompare(dirPrefix, e.sk, l.prefix) >= 0 || prefixOfCat(l.prefix, dirPrefix, e.sk)) &&
				(catCompare(dirPrefix, e.sk, l.after) > 0 || prefixOfCat(l.after, dirPrefix, e.sk))
		}
		return catCompare(dirPrefix, e.sk, l.prefix) >= 0 && catCompare(dirPrefix, e.sk, l.after) > 0
	})
	if errors.Is(err, unix.ENOENT) {
		return nil // removed (pruned empty) since we opened it
	}
	if err != nil {
		return err
	}
	if marker && dirPrefix != "" {
		if err := l.file(d, dirMarker, dirPrefix); err != nil {
			return err
		}
	}
	for i := 0; i < len(entries); i++ {
		if l.steps++; l.steps%256 == 0 {
			if err := ctxErr(l.ctx, "list"); err != nil {
				return err
			}
		}
		e := entries[i]
		full := dirPrefix + e.sk
		if !strings.HasPrefix(full, l.prefix) && !(e.dir && strings.HasPrefix(l.prefix, full)) {
			if full > l.prefix {
				break // past every key with the prefix
			}
			continue
		}
		if len(full) > MaxKeyLen {
			continue
		}
		if !e.dir {
			if err := l.file(d, e.name, full); err != nil {
				return err
			}
			continue
		}
		if cp, ok := l.commonPrefix(full); ok {
			// Every key below shares cp: report it without walking.
			if cp <= l.after || cp == l.lastCP {
				continue
			}
			has, err := hasKeys(d, e.name)
			if err != nil {
				return err
			}
			if has {
				if err := l.add(cp, nil); err != nil {
					return err
				}
			}
			continue
		}
		child, err := openDirAt(d, e.name)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				continue // removed or replaced since we read the directory
			}
			return fmt.Errorf("list %s: open %s: %w", l.b.name, full, err)
		}
		err = l.walk(child, full)
		_ = child.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// catCompare compares a+b with x without concatenating.
func catCompare(a, b, x string) int {
	n := min(len(a), len(x))
	if c := strings.Compare(a[:n], x[:n]); c != 0 {
		return c
	}
	if len(x) <= len(a) {
		if len(a)+len(b) > len(x) {
			return 1
		}
		return 0
	}
	return strings.Compare(b, x[len(a):])
}

// prefixOfCat reports whether p starts with a+b.
func prefixOfCat(p, a, b string) bool {
	return strings.HasPrefix(p, a) && strings.HasPrefix(p[len(a):], b)
}

// commonPrefix returns the common prefix that key (or every key starting
// with key, for a directory) rolls up into, if any.
func (l *lister) commonPrefix(key string) (string, bool) {
	if l.delim == "" || !strings.HasPrefix(key, l.prefix) {
		return "", false
	}
	j := strings.Index(key[len(l.prefix):], l.delim)
	if j < 0 {
		return "", false
	}
	return key[:len(l.prefix)+j+len(l.delim)], true
}

// file handles the object key stored as file name in directory d.
func (l *lister) file(d *os.File, name, key string) error {
	if !strings.HasPrefix(key, l.prefix) || key <= l.after {
		return nil
	}
	if cp, ok := l.commonPrefix(key); ok {
		if cp <= l.after || cp == l.lastCP {
			return nil
		}
		return l.add(cp, nil)
	}
	if l.n == l.max {
		l.res.IsTruncated = true
		return errStop
	}
	f, err := openFileAt(d, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
			return nil // deleted or replaced since we read the directory
		}
		return fmt.Errorf("list %s: open %s: %w", l.b.name, key, err)
	}
	fi, err := l.s.statObject(f, l.b.name, key)
	_ = f.Close()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			l.s.log.Warn("bucket store: skipping unreadable object in listing", "bucket", l.b.name, "key", key, "err", err)
		}
		return nil
	}
	return l.add(key, &fi.info)
}

// add appends an object (info != nil) or a common prefix to the page, or
// stops the walk when the page is full.
func (l *lister) add(key string, info *ObjectInfo) error {
	if l.n == l.max {
		l.res.IsTruncated = true
		return errStop
	}
	l.n++
	l.last = key
	if info != nil {
		l.res.Objects = append(l.res.Objects, *info)
	} else {
		l.lastCP = key
		l.res.CommonPrefixes = append(l.res.CommonPrefixes, key)
	}
	return nil
}

// hasKeys reports whether directory name in d holds any listable key.
func hasKeys(d *os.File, name string) (bool, error) {
	child, err := openDirAt(d, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return false, nil
		}
		return false, err
	}
	defer child.Close()
	for {
		des, err := child.ReadDir(64)
		for _, de := range des {
			n, t := de.Name(), de.Type()
			switch {
			case n == dirMarker && t.IsRegular():
				return true, nil
			case strings.HasPrefix(n, reservedPrefix) || !validSegment(n):
			case t.IsRegular():
				return true, nil
			case t.IsDir():
				if ok, err := hasKeys(child, n); ok || err != nil {
					return ok, err
				}
			}
		}
		if errors.Is(err, io.EOF) || len(des) == 0 {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// openDirAt opens the directory name inside d without following symlinks.
func openDirAt(d *os.File, name string) (*os.File, error) {
	return openAt(d, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
}

// openFileAt opens the file name inside d for reading without following
// symlinks (and without blocking on a FIFO).
func openFileAt(d *os.File, name string) (*os.File, error) {
	return openAt(d, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
}

func openAt(d *os.File, name string, flags int) (*os.File, error) {
	var f *os.File
	err := withFd(d, func(dfd int) error {
		for {
			fd, err := unix.Openat(dfd, name, flags, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			f = os.NewFile(uintptr(fd), d.Name()+"/"+name)
			return nil
		}
	})
	return f, err
}
