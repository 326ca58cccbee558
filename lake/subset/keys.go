package subset

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floe-lake/floe/objstore"
)

// DefaultMaxKeys bounds the object keys Keys caches (about 150 bytes each).
const DefaultMaxKeys = 500_000

// ErrTooLarge is returned for a view that names more files than the cache
// may hold.
var ErrTooLarge = errors.New("subset: the view names more files than the key cache holds")

// Keys answers which objects a view names, for the S3 endpoint checking a
// credential that reads one view (vend.ReadListed). A view's key set is read
// from its manifest list and manifests once and cached; views never change,
// so the cache needs no invalidation. The cache holds at most a fixed number
// of keys over all views and forgets the least recently used views first.
type Keys struct {
	fs  icebergio.IO
	max int

	mu    sync.Mutex
	lru   *list.List // of *keySet, most recent first
	byDir map[string]*list.Element
	total int
}

type keySet struct {
	dir  string
	keys map[string]struct{}
}

// NewKeys returns a Keys reading views through fsys and caching at most
// maxKeys keys (DefaultMaxKeys when maxKeys <= 0).
func NewKeys(fsys icebergio.IO, maxKeys int) *Keys {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Keys{fs: fsys, max: maxKeys, lru: list.New(), byDir: map[string]*list.Element{}}
}

// Contains reports whether the view whose directory is dirKey in bucket (a
// key ending in "/") names the object key: a live data or delete file of
// its manifests. Objects inside the directory itself are the credential
// grant's own prefix and are not asked about. A view that does not exist
// names nothing.
func (k *Keys) Contains(ctx context.Context, bucket, dirKey, key string) (bool, error) {
	if !strings.HasSuffix(dirKey, "/") {
		return false, fmt.Errorf("subset: view directory %q does not end in /", dirKey)
	}
	id := bucket + "/" + dirKey
	k.mu.Lock()
	if el, ok := k.byDir[id]; ok {
		k.lru.MoveToFront(el)
		_, hit := el.Value.(*keySet).keys[key]
		k.mu.Unlock()
		return hit, nil
	}
	k.mu.Unlock()
	keys, err := k.read(ctx, bucket, dirKey)
	if err != nil {
		return false, err
	}
	_, hit := keys[key]
	if keys != nil {
		k.put(id, keys)
	}
	return hit, nil
}

// Len returns the cache's size: the keys cached, plus one per view.
func (k *Keys) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.total
}

func (k *Keys) put(id string, keys map[string]struct{}) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.byDir[id]; ok {
		return
	}
	// Each view costs its keys and one more, so that views naming no file
	// are bounded too.
	for k.total+len(keys)+1 > k.max && k.lru.Len() > 0 {
		last := k.lru.Back()
		ks := last.Value.(*keySet)
		k.lru.Remove(last)
		delete(k.byDir, ks.dir)
		k.total -= len(ks.keys) + 1
	}
	k.byDir[id] = k.lru.PushFront(&keySet{dir: id, keys: keys})
	k.total += len(keys) + 1
}

// read collects the keys a view's manifests name in bucket.
func (k *Keys) read(ctx context.Context, bucket, dirKey string) (map[string]struct{}, error) {
	dir := "s3://" + bucket + "/" + dirKey
	f, err := k.fs.Open(dir + ListName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // not cached: the cache's bound counts keys
	}
	if err != nil {
		return nil, fmt.Errorf("subset: open %s: %w", dir+ListName, err)
	}
	manifests, err := iceberg.ReadManifestList(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("subset: read %s: %w", dir+ListName, err)
	}
	keys := map[string]struct{}{}
	for _, m := range manifests {
		if !strings.HasPrefix(m.FilePath(), dir) {
			return nil, fmt.Errorf("subset: view %s names a manifest outside it: %s", dir, m.FilePath())
		}
		for e, err := range m.Entries(k.fs, true) {
			if err != nil {
				return nil, fmt.Errorf("subset: read %s: %w", m.FilePath(), err)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			b, key, err := objstore.ParseLocation(e.DataFile().FilePath())
			if err != nil || b != bucket || key == "" {
				continue // another store's file: no key of this bucket
			}
			keys[key] = struct{}{}
			if len(keys)+1 > k.max {
				return nil, fmt.Errorf("%w (%d)", ErrTooLarge, k.max)
			}
		}
	}
	return keys, nil
}
