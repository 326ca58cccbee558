package bucket

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/floe-lake/floe/objstore/sse"
)

const (
	defaultMaxParts    = 10000
	defaultMinPartSize = 5 << 20
	// bufSize is the size of the pooled copy buffers.
	bufSize = 256 << 10
	// staleAfter is the age after which New removes leftover staging files.
	staleAfter = time.Hour
	// lockStripes is the number of per-key lock stripes.
	lockStripes = 64

	stagingSub = "tmp"     // staging files for Put, Copy, parts and Complete
	uploadsSub = "uploads" // one directory per multipart upload
)

// Options configures a Store.
type Options struct {
	// Buckets maps a bucket name to its root directory (created if missing).
	// Names follow the S3 rules (3..63 of a-z, 0-9, '.', '-').
	Buckets map[string]string
	// TempDir holds staging files and multipart uploads. It must be on the
	// same file system as every bucket root (New checks). Default:
	// "<parent of the first root in name order>/.floe-staging".
	TempDir string
	// Encryption, when set, encrypts every object written (sse format);
	// nil stores plaintext. Encrypted objects are readable only when set.
	Encryption sse.KeyWrapper
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives warnings (default: discard).
	Logger *slog.Logger
	// MaxMultipartParts is the highest part number (default 10000).
	MaxMultipartParts int
	// MinPartSize is the smallest size of a non-last part (default 5 MiB,
	// as in S3; tests may lower it).
	MinPartSize int64
	// ColdDir, when set, is the cold tier: bucket b's cold objects live in
	// ColdDir/b, laid out like the bucket root (see MoveToCold). Get, Head,
	// Copy, List and Delete cover both tiers. It must not be inside a
	// bucket root (unless under a ".floe-*" directory); each ColdDir/b must
	// be on ColdDir's file system. "" means no cold tier.
	ColdDir string
}

// Store is the storage engine: objects are files under each bucket's root
// directory. It is safe for concurrent use.
type Store struct {
	buckets  map[string]*bucketRoot
	names    []string
	tempDir  string
	staging  *os.File // staging directory (fd for renameat/linkat)
	uploads  *os.Root // multipart uploads
	enc      sse.KeyWrapper
	now      func() time.Time
	log      *slog.Logger
	maxParts int
	minPart  int64

	locks       [lockStripes]sync.Mutex // per key: conditional publish, delete
	uploadLocks [lockStripes]sync.Mutex // per upload: part publish, complete, abort; taken before locks
	bufs        sync.Pool
	noXattr     atomic.Bool // set once the file system refused an xattr

	coldStaging *os.File     // ColdDir/.floe-staging
	moveSeq     atomic.Int64 // distinguishes staging names of moves
	forceCopy   bool         // tests: copy to the cold tier even where a hard link would do
}

type bucketRoot struct {
	name string
	dir  string
	root *os.Root
	cold *bucketRoot // the bucket's cold tier; nil without one
}

// New opens the buckets, creating missing root and staging directories,
// and removes staging files older than an hour (left by a crash).
func New(o Options) (*Store, error) {
	if len(o.Buckets) == 0 {
		return nil, errors.New("bucket store: no buckets configured")
	}
	s := &Store{
		buckets:  make(map[string]*bucketRoot, len(o.Buckets)),
		enc:      o.Encryption,
		now:      o.Now,
		log:      o.Logger,
		maxParts: o.MaxMultipartParts,
		minPart:  o.MinPartSize,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxParts <= 0 {
		s.maxParts = defaultMaxParts
	}
	if s.minPart <= 0 {
		s.minPart = defaultMinPartSize
	}
	s.bufs.New = func() any { b := make([]byte, bufSize); return &b }
	for name := range o.Buckets {
		s.names = append(s.names, name)
	}
	slices.Sort(s.names)
	ok := false
	defer func() {
		if !ok {
			_ = s.Close()
		}
	}()
	var devs []uint64
	for _, name := range s.names {
		if !validBucketName(name) {
			return nil, fmt.Errorf("bucket store: invalid bucket name %q", name)
		}
		dir, dev, err := prepareDir(o.Buckets[name])
		if err != nil {
			return nil, fmt.Errorf("bucket store: bucket %s: %w", name, err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("bucket store: bucket %s: %w", name, err)
		}
		s.buckets[name] = &bucketRoot{name: name, dir: dir, root: root}
		devs = append(devs, dev)
	}
	s.tempDir = o.TempDir
	if s.tempDir == "" {
		s.tempDir = filepath.Join(filepath.Dir(s.buckets[s.names[0]].dir), ".floe-staging")
	}
	tmp, dev, err := prepareDir(s.tempDir)
	if err != nil {
		return nil, fmt.Errorf("bucket store: temp dir: %w", err)
	}
	s.tempDir = tmp
	for i, name := range s.names {
		if devs[i] != dev {
			return nil, fmt.Errorf("bucket store: temp dir %s is not on the same file system as bucket %s (%s); "+
				"atomic publish needs a rename", tmp, name, s.buckets[name].dir)
		}
		if rel, err := filepath.Rel(s.buckets[name].dir, tmp); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if first, _, _ := strings.Cut(rel, "/"); !strings.HasPrefix(first, reservedPrefix) {
				return nil, fmt.Errorf("bucket store: temp dir %s is inside bucket %s; put it outside or under a %q* directory",
					tmp, name, reservedPrefix)
			}
		}
	}
	for _, sub := range []string{stagingSub, uploadsSub} {
		if err := os.MkdirAll(filepath.Join(tmp, sub), 0o750); err != nil {
			return nil, fmt.Errorf("bucket store: temp dir: %w", err)
		}
	}
	if s.staging, err = os.Open(filepath.Join(tmp, stagingSub)); err != nil {
		return nil, fmt.Errorf("bucket store: temp dir: %w", err)
	}
	if s.uploads, err = os.OpenRoot(filepath.Join(tmp, uploadsSub)); err != nil {
		return nil, fmt.Errorf("bucket store: temp dir: %w", err)
	}
	if o.ColdDir != "" {
		if err := s.openCold(o.ColdDir); err != nil {
			return nil, err
		}
	}
	s.cleanStaging()
	s.cleanUploads()
	ok = true
	return s, nil
}

// prepareDir creates dir if missing and returns its absolute, symlink-free
// path and device number.
func prepareDir(dir string) (string, uint64, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", 0, err
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return "", 0, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", 0, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", 0, fmt.Errorf("%s: cannot read device number", abs)
	}
	return abs, uint64(st.Dev), nil //nolint:unconvert // Dev is uint64 on linux/amd64 but not everywhere
}

// cleanStaging removes staging files older than staleAfter.
func (s *Store) cleanStaging() {
	entries, err := s.staging.ReadDir(-1)
	if err != nil {
		s.log.Warn("bucket store: cannot list staging directory", "dir", s.tempDir, "err", err)
		return
	}
	cutoff := s.now().Add(-staleAfter)
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue
		}
		p := filepath.Join(s.tempDir, stagingSub, e.Name())
		if err := os.RemoveAll(p); err != nil {
			s.log.Warn("bucket store: cannot remove stale staging file", "path", p, "err", err)
			continue
		}
		s.log.Info("bucket store: removed stale staging file", "path", p)
	}
}

// Close releases the directory handles. In-flight operations must be done.
func (s *Store) Close() error {
	var errs []error
	for _, b := range s.buckets {
		errs = append(errs, b.root.Close())
		if b.cold != nil {
			errs = append(errs, b.cold.root.Close())
		}
	}
	if s.coldStaging != nil {
		errs = append(errs, s.coldStaging.Close())
	}
	if s.staging != nil {
		errs = append(errs, s.staging.Close())
	}
	if s.uploads != nil {
		errs = append(errs, s.uploads.Close())
	}
	return errors.Join(errs...)
}

// Buckets returns the bucket names in sorted order.
func (s *Store) Buckets() []string { return slices.Clone(s.names) }

// Root returns the root directory of a bucket, or "" if there is no such
// bucket.
func (s *Store) Root(bucket string) string {
	if b, ok := s.buckets[bucket]; ok {
		return b.dir
	}
	return ""
}

// Encrypted reports whether new objects are encrypted.
func (s *Store) Encrypted() bool { return s.enc != nil }

func (s *Store) bucket(name string) (*bucketRoot, error) {
	b, ok := s.buckets[name]
	if !ok {
		return nil, errorf(CodeNoSuchBucket, "the bucket %q does not exist", name)
	}
	return b, nil
}

// lookup resolves bucket and validates key.
func (s *Store) lookup(bucket, key string) (*bucketRoot, error) {
	b, err := s.bucket(bucket)
	if err != nil {
		return nil, err
	}
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	return b, nil
}

// lock takes the stripe lock of bucket/key; the caller must call the
// returned func. It serialises conditional publishes and deletes of one key
// within this process.
func (s *Store) lock(bucket, key string) func() {
	h := xxh3.HashString(bucket + "\x00" + key)
	m := &s.locks[h%lockStripes]
	m.Lock()
	return m.Unlock
}

func (s *Store) getBuf() *[]byte  { return s.bufs.Get().(*[]byte) }
func (s *Store) putBuf(b *[]byte) { s.bufs.Put(b) }

// isNotExist reports whether err means a path (or one of its parents) does
// not exist or escapes its root.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) ||
		isEscape(err)
}

// isEscape reports whether err is os.Root refusing a path that leaves the
// root (a symlink pointing outside).
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && strings.Contains(pe.Err.Error(), "escapes from parent")
}

// ctxErr returns ctx's error, if any, wrapped with op.
func ctxErr(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}
