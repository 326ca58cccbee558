package engine

import (
	"container/list"
	"context"
	"fmt"
	"github.com/floe-lake/floe/internal/spans"
	"go.opentelemetry.io/otel/trace"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	icebergio "github.com/apache/iceberg-go/io"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sys/unix"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/objstore"
	"github.com/floe-lake/floe/objstore/bucket"
)

// ObjectSource opens the objects of a warehouse for the engine. The engine
// reads a plaintext object of the embedded store in place (LocalPath), and
// copies every other object (encrypted at rest, or on external S3) into
// memory through Open.
type ObjectSource interface {
	// LocalPath returns the file that holds the plaintext of location, or
	// ok false when the object is not a plain local file.
	LocalPath(ctx context.Context, location string) (path string, ok bool, err error)
	// Open returns the plaintext of location and its size.
	Open(ctx context.Context, location string) (io.ReadCloser, int64, error)
	// Dirs lists the directories LocalPath returns files under; DuckDB may
	// read only there (and from the in-memory copies).
	Dirs() []string
}

// BucketSource is the ObjectSource of Floe's embedded object store.
type BucketSource struct {
	Store *bucket.Store
}

// LocalPath returns the object's file when it is stored unencrypted.
func (b BucketSource) LocalPath(ctx context.Context, location string) (string, bool, error) {
	bk, key, err := objstore.ParseLocation(location)
	if err != nil {
		return "", false, fmt.Errorf("data file location %q: %w", location, err)
	}
	root := b.Store.Root(bk)
	if root == "" {
		return "", false, floe.E(floe.NotFound, "object", "data file %q is not in a bucket of this server", location)
	}
	info, err := b.Store.Head(ctx, bk, key, bucket.GetOptions{})
	if err != nil {
		return "", false, fmt.Errorf("data file %q: %w", location, err)
	}
	if info.Encrypted {
		return "", false, nil
	}
	if err := bucket.ValidateKey(key); err != nil {
		return "", false, err
	}
	p, err := b.Store.ObjectPath(bk, key) // in the bucket root or its cold tier
	return p, err == nil, err
}

// Open returns the decrypted object.
func (b BucketSource) Open(ctx context.Context, location string) (io.ReadCloser, int64, error) {
	bk, key, err := objstore.ParseLocation(location)
	if err != nil {
		return nil, 0, fmt.Errorf("data file location %q: %w", location, err)
	}
	obj, err := b.Store.Get(ctx, bk, key, bucket.GetOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("data file %q: %w", location, err)
	}
	return obj.Body, obj.Info.Size, nil
}

// Dirs lists the bucket roots.
func (b BucketSource) Dirs() []string {
	var out []string
	for _, name := range b.Store.Buckets() {
		out = append(out, b.Store.Dirs(name)...) // the root and its cold tier
	}
	return out
}

// fdDir is where DuckDB reaches in-memory copies (memfd_create(2) files).
const fdDir = "/proc/self/fd/"

// fileCache keeps in-memory copies of objects (memfd files) by location,
// least recently used first out, within a byte budget and a count of files
// (each holds a descriptor). Data files are immutable, so a copy stays
// valid. An entry in use by a query is pinned: its descriptor (and so its
// /proc/self/fd path) is not closed and reused under the query; a query
// may pin more files than the count, which are closed when it ends.
type fileCache struct {
	src      ObjectSource
	budget   int64
	maxFiles int

	mu      sync.Mutex
	gen     uint64 // numbers the copies made
	size    int64
	entries map[string]*list.Element // of *cachedFile
	lru     *list.List               // front: most recently used
	loading map[string]*loadCall

	// shapes holds the top-level columns of data files by location
	// (files are immutable, so an entry never goes stale).
	shapes *lru.Cache[string, []fileField]
}

// fileField is a top-level column of a Parquet file.
type fileField struct {
	id   int
	name string
	// text is set for a column of a primitive type annotated as UTF-8
	// text (other byte arrays read as BLOB).
	text bool
}

// defaultShapeEntries bounds the cache of data file column lists.
const defaultShapeEntries = 65536

type cachedFile struct {
	location string
	gen      uint64 // tells copies apart that reuse a descriptor number
	f        *os.File
	size     int64
	pins     int
	dropped  bool // evicted while pinned: close at the last unpin
}

type loadCall struct {
	done chan struct{}
	err  error
}

func newFileCache(src ObjectSource, budget int64, maxFiles int) *fileCache {
	shapes, err := lru.New[string, []fileField](defaultShapeEntries)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &fileCache{src: src, budget: budget, maxFiles: maxFiles, entries: map[string]*list.Element{}, lru: list.New(), loading: map[string]*loadCall{}, shapes: shapes}
}

// fields returns the top-level columns (field id and name) of the data
// file at location, readable at path (a path returned by c.path and still
// pinned), from its Parquet footer; ok is false when the footer cannot be
// read or a column has no field id.
func (c *fileCache) fields(ctx context.Context, location, path string) (_ []fileField, ok bool) {
	key := scopeOf(ctx).key(location)
	if ff, ok := c.shapes.Get(key); ok {
		return ff, ff != nil
	}
	ff := readFields(path)
	c.shapes.Add(key, ff)
	return ff, ff != nil
}

// readFields reads the top-level columns of a Parquet file; nil when it
// cannot. The file comes from the warehouse, so a footer the Parquet
// library chokes on (even by panicking) only means "unknown".
func readFields(path string) (out []fileField) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	r, err := file.NewParquetReader(f)
	if err != nil {
		return nil
	}
	root := r.MetaData().Schema.Root()
	out = make([]fileField, 0, root.NumFields())
	for i := range root.NumFields() {
		n := root.Field(i)
		if n.FieldID() < 0 {
			return nil
		}
		_, str := n.LogicalType().(schema.StringLogicalType)
		text := n.Type() == schema.Primitive && (str || n.ConvertedType() == schema.ConvertedTypes.UTF8)
		out = append(out, fileField{id: int(n.FieldID()), name: n.Name(), text: text})
	}
	return out
}

// pinSet is the files one query holds; release unpins them all.
type pinSet struct {
	c     *fileCache
	files []*cachedFile
}

// sig identifies the copies pinned: a plan over the same paths reads the
// same files only when sig is the same too, as a descriptor number may be
// reused by another copy once its file was closed.
func (p *pinSet) sig() string {
	if p == nil || len(p.files) == 0 {
		return ""
	}
	b := make([]byte, 0, 8*len(p.files))
	for _, cf := range p.files {
		b = strconv.AppendUint(b, cf.gen, 36)
		b = append(b, ',')
	}
	return string(b)
}

func (p *pinSet) release() {
	if p == nil || p.c == nil {
		return
	}
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	for _, cf := range p.files {
		cf.pins--
		if cf.pins == 0 && cf.dropped {
			_ = cf.f.Close()
		}
	}
	p.files = nil
	p.c.evictLocked()
}

// path returns a path DuckDB can read location at: the object's own file
// when it is plaintext on local disk, else an in-memory copy pinned in ps.
// The files of a foreign table (ctx's foreignScope) are read from its
// remote and cached under keys of their own.
func (c *fileCache) path(ctx context.Context, location string, ps *pinSet) (string, error) {
	src := c.source(ctx)
	if p, ok, err := src.LocalPath(ctx, location); err != nil {
		return "", err
	} else if ok {
		return p, nil
	}
	return c.pinned(ctx, scopeOf(ctx).key(location), ps, func(ctx context.Context) (*cachedFile, error) { return c.load(ctx, src, location) })
}

// source returns what reads the files ctx names: the foreign table's
// remote, or the warehouse's objects.
func (c *fileCache) source(ctx context.Context) ObjectSource {
	if s := scopeOf(ctx); s != nil {
		return s.src
	}
	return c.src
}

// pinned returns the path of the in-memory file cached under key, pinned
// in ps, made by load when it is not cached (once, however many queries
// ask for it at the same time).
func (c *fileCache) pinned(ctx context.Context, key string, ps *pinSet, load func(context.Context) (*cachedFile, error)) (string, error) {
	for {
		c.mu.Lock()
		if el, ok := c.entries[key]; ok {
			cf := el.Value.(*cachedFile)
			c.lru.MoveToFront(el)
			cf.pins++
			ps.files = append(ps.files, cf)
			c.mu.Unlock()
			return fdDir + strconv.Itoa(int(cf.f.Fd())), nil
		}
		if lc, ok := c.loading[key]; ok {
			c.mu.Unlock()
			select {
			case <-lc.done:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			if lc.err != nil {
				return "", lc.err
			}
			continue
		}
		lc := &loadCall{done: make(chan struct{})}
		c.loading[key] = lc
		c.mu.Unlock()
		cf, err := load(ctx)
		c.mu.Lock()
		delete(c.loading, key)
		lc.err = err
		close(lc.done)
		if err != nil {
			c.mu.Unlock()
			return "", err
		}
		cf.location = key
		c.gen++
		cf.gen = c.gen
		c.entries[key] = c.lru.PushFront(cf)
		c.size += cf.size
		cf.pins++
		ps.files = append(ps.files, cf)
		c.evictLocked()
		c.mu.Unlock()
		return fdDir + strconv.Itoa(int(cf.f.Fd())), nil
	}
}

// load copies an object of src into a new memfd.
func (c *fileCache) load(ctx context.Context, src ObjectSource, location string) (_ *cachedFile, err error) {
	if spans.On(ctx) {
		var span trace.Span
		ctx, span = spans.Start(ctx, "sql.read_file")
		defer func() { spans.End(span, err) }()
	}
	body, size, err := src.Open(ctx, location)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	fd, err := unix.MemfdCreate("floe-sql", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:"+location)
	n, err := io.Copy(f, body)
	if err == nil && n != size {
		err = fmt.Errorf("read %d of %d bytes", n, size)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("copy data file %q: %w", location, err)
	}
	return &cachedFile{location: location, f: f, size: n}, nil
}

// evictLocked drops entries from the back while over budget or count; a
// pinned one is closed when its last query ends.
func (c *fileCache) evictLocked() {
	for el := c.lru.Back(); el != nil && (c.size > c.budget || len(c.entries) > c.maxFiles); {
		prev := el.Prev()
		cf := el.Value.(*cachedFile)
		c.lru.Remove(el)
		delete(c.entries, cf.location)
		c.size -= cf.size
		if cf.pins == 0 {
			_ = cf.f.Close()
		} else {
			cf.dropped = true
		}
		el = prev
	}
}

// stats reports the cached bytes and entries.
func (c *fileCache) stats() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size, len(c.entries)
}

// close releases every unpinned copy.
func (c *fileCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; el = el.Next() {
		cf := el.Value.(*cachedFile)
		if cf.pins == 0 {
			_ = cf.f.Close()
		} else {
			cf.dropped = true
		}
	}
	c.entries = map[string]*list.Element{}
	c.lru.Init()
	c.size = 0
}

// IOSource is the ObjectSource of tables on external storage, read through
// an iceberg-go FileIO (every file is copied into memory).
type IOSource struct {
	FS icebergio.IO
}

// LocalPath reports that no object is a local file.
func (IOSource) LocalPath(context.Context, string) (string, bool, error) { return "", false, nil }

// Open opens the object through the FileIO.
func (s IOSource) Open(_ context.Context, location string) (io.ReadCloser, int64, error) {
	f, err := s.FS.Open(location)
	if err != nil {
		return nil, 0, fmt.Errorf("data file %q: %w", location, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("data file %q: %w", location, err)
	}
	return f, st.Size(), nil
}

// Dirs lists no directories.
func (IOSource) Dirs() []string { return nil }
