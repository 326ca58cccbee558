package restcat

import (
	"bytes"
	"io"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// DefaultManifestCacheBytes bounds the manifest files scan planning keeps
// in memory.
const DefaultManifestCacheBytes = 128 << 20

// manifestCacheTTL is how long a cached manifest stays unread before it
// goes; manifests never change, so it only lets idle memory go.
const manifestCacheTTL = time.Hour

// manifestCache reads through an IO and keeps the Avro files it reads
// (manifest lists and manifests, immutable once written: a new snapshot
// writes new ones under new names) in a least-recently-used cache bounded
// by bytes, so that planning a table again, with any filter, reads no
// manifest from storage. It keeps their bytes; decoding is iceberg-go's,
// each time.
type manifestCache struct {
	icebergio.IO
	files *boundedLRU[string, []byte]
}

func newManifestCache(fsys icebergio.IO, maxBytes int64, now func() time.Time) *manifestCache {
	return &manifestCache{IO: fsys, files: newBoundedLRU[string, []byte](1<<20, maxBytes, manifestCacheTTL, now)}
}

func cacheable(name string) bool { return strings.HasSuffix(name, ".avro") }

// Open implements icebergio.IO.
func (c *manifestCache) Open(name string) (icebergio.File, error) {
	if !cacheable(name) {
		return c.IO.Open(name)
	}
	b, err := c.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(b), name: name, size: int64(len(b))}, nil
}

// ReadFile implements icebergio.ReadFileIO.
func (c *manifestCache) ReadFile(name string) ([]byte, error) {
	if b, ok := c.files.Get(name); ok {
		return b, nil
	}
	var b []byte
	var err error
	if r, ok := c.IO.(icebergio.ReadFileIO); ok {
		b, err = r.ReadFile(name)
	} else {
		var f icebergio.File
		if f, err = c.IO.Open(name); err == nil {
			b, err = io.ReadAll(f)
			f.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	if cacheable(name) {
		c.files.Add(name, b, int64(len(b))+int64(len(name))+64)
	}
	return b, nil
}
