package vend

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"slices"
	"strings"

	"github.com/floe-lake/floe"
)

// A ReadFiles credential names its files in its embedded session token as
// a fileSet: a random 16-byte salt and, for each file, the first
// fileDigestLen bytes of SHA-256(salt || bucket || 0x00 || key), sorted.
// The token is sealed (encrypted and authenticated), so the holder can
// neither read nor change the set; the salt differs per credential, so no
// key can be chosen in advance to collide with a digest. Two distinct keys
// share a 64-bit digest with probability 2^-64: among the few thousand
// objects of a table, no other object is readable by accident.
const (
	fileSaltLen   = 16
	fileDigestLen = 8
)

// fileSet is the digests of a ReadFiles credential's files.
type fileSet struct {
	salt    []byte
	digests []byte // fileDigestLen bytes each, sorted
}

// wireFiles is a fileSet as sealed in a token: the salt in the session's
// JSON, the digests as raw bytes right after it (see seal).
type wireFiles struct {
	Salt    []byte `json:"s"`
	Digests []byte `json:"d"`
}

// newFileSet returns the digest set of keys in bucket under a new salt.
func newFileSet(bucket string, keys []string) *fileSet {
	fs := &fileSet{salt: make([]byte, fileSaltLen)}
	rand.Read(fs.salt)
	ds := make([][]byte, 0, len(keys))
	for _, k := range keys {
		ds = append(ds, fs.digest(bucket, k))
	}
	slices.SortFunc(ds, bytes.Compare)
	ds = slices.CompactFunc(ds, bytes.Equal)
	fs.digests = bytes.Join(ds, nil)
	return fs
}

func (fs *fileSet) digest(bucket, key string) []byte {
	h := sha256.New()
	h.Write(fs.salt)
	h.Write([]byte(bucket))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return h.Sum(nil)[:fileDigestLen]
}

// contains reports whether the set names key in bucket (binary search).
func (fs *fileSet) contains(bucket, key string) bool {
	if len(fs.salt) != fileSaltLen || len(fs.digests)%fileDigestLen != 0 {
		return false
	}
	d := fs.digest(bucket, key)
	n := len(fs.digests) / fileDigestLen
	lo, hi := 0, n
	for lo < hi {
		m := (lo + hi) / 2
		switch c := bytes.Compare(fs.digests[m*fileDigestLen:(m+1)*fileDigestLen], d); {
		case c == 0:
			return true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

// hasFile reports whether the session's files name key in bucket: its
// Files as minted, or their digests as resolved from a token.
func (s Session) hasFile(bucket, key string) bool {
	if s.files != nil {
		return s.files.contains(bucket, key)
	}
	return slices.Contains(s.Files, key)
}

// validateFiles checks that Files come with ReadFiles grants only, that a
// ReadFiles grant comes with 1 to MaxFiles files, and that each file is a
// key under the prefix of a ReadFiles grant (one bucket).
func (s Session) validateFiles() error {
	var files []Grant
	for _, g := range s.Grants {
		if g.Access == ReadFiles {
			files = append(files, g)
		}
	}
	switch {
	case len(files) == 0 && len(s.Files) == 0:
		return nil
	case len(files) == 0:
		return floe.E(floe.Invalid, "credential", "a credential names files only with read-files grants")
	case len(s.Files) == 0 || len(s.Files) > MaxFiles:
		return floe.E(floe.Invalid, "credential", "a read-files credential names 1 to %d files, not %d", MaxFiles, len(s.Files))
	}
	for _, g := range files[1:] {
		if g.Bucket != files[0].Bucket {
			return floe.E(floe.Invalid, "credential", "a read-files credential's grants are in one bucket")
		}
	}
	for _, k := range s.Files {
		if hasDotSegment(k) || hasControl(k) || !slices.ContainsFunc(files, func(g Grant) bool { return strings.HasPrefix(k, g.Prefix) }) {
			return floe.E(floe.Invalid, "credential", "a read-files credential's file %q is not under its grants' prefixes", k)
		}
	}
	return nil
}

// filesBucket is the bucket of the session's ReadFiles grants ("" if none).
func (s Session) filesBucket() string {
	for _, g := range s.Grants {
		if g.Access == ReadFiles {
			return g.Bucket
		}
	}
	return ""
}
