package bucket

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"

	"github.com/floe-lake/floe/objstore/sse"
)

const (
	uploadMetaFile = "upload.json"
	// maxPartSize is the S3 limit on one part.
	maxPartSize = 5 << 30
	// MaxListParts is the largest (and default) page size of ListParts.
	MaxListParts = 1000
)

// CompletedPart names a part in CompleteMultipart.
type CompletedPart struct {
	Number int
	ETag   string
}

// PartInfo describes an uploaded part.
type PartInfo struct {
	Number       int
	ETag         string // quoted
	Size         int64  // plaintext bytes
	LastModified time.Time
}

// Upload describes an in-progress multipart upload.
type Upload struct {
	Key, UploadID string
	Initiated     time.Time
}

// uploadMeta is the upload.json of a multipart upload.
type uploadMeta struct {
	Bucket      string            `json:"bucket"`
	Key         string            `json:"key"`
	Initiated   time.Time         `json:"initiated"`
	ContentType string            `json:"ct,omitempty"`
	User        map[string]string `json:"um,omitempty"`
	Checksums   map[string]string `json:"ck,omitempty"`
}

// A multipart upload lives in <TempDir>/uploads/<uploadID>/: upload.json
// and one file per part named "<number>.<etag hex>" (encrypted like an
// object when the store encrypts). Keeping the ETag in the name makes a part
// file and its ETag one atomic rename. Incomplete uploads stay until
// completed or aborted.

// newUploadID returns 32 random hex digits.
func newUploadID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("upload id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func validUploadID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func noSuchUpload(id string) *Error {
	return errorf(CodeNoSuchUpload, "the upload %q does not exist; it may have been aborted or completed", id)
}

// lockUpload serialises part publishes, Complete and Abort of one upload.
func (s *Store) lockUpload(id string) func() {
	m := &s.uploadLocks[xxh3.HashString(id)%lockStripes]
	m.Lock()
	return m.Unlock
}

// CreateMultipart starts a multipart upload of bucket/key. The content type,
// user metadata and checksums of o are those of the final object; its
// conditions are checked by CompleteMultipart.
func (s *Store) CreateMultipart(ctx context.Context, bucket, key string, o PutOptions) (string, error) {
	if _, err := s.lookup(bucket, key); err != nil {
		return "", err
	}
	if err := checkUserMeta(o.UserMetadata); err != nil {
		return "", err
	}
	if err := ctxErr(ctx, "create multipart upload"); err != nil {
		return "", err
	}
	id, err := newUploadID()
	if err != nil {
		return "", err
	}
	m := uploadMeta{Bucket: bucket, Key: key, Initiated: s.now().UTC(), ContentType: o.ContentType,
		User: o.UserMetadata, Checksums: o.Checksums}
	data, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("create multipart upload: %w", err)
	}
	if err := s.uploads.Mkdir(id, 0o750); err != nil {
		return "", fmt.Errorf("create multipart upload: %w", err)
	}
	tmp := id + "/" + uploadMetaFile + ".tmp"
	err = writeSynced(s.uploads, tmp, data)
	if err == nil {
		err = s.uploads.Rename(tmp, id+"/"+uploadMetaFile)
	}
	if err == nil {
		err = syncDir(s.uploads, id)
	}
	if err == nil {
		err = syncDir(s.uploads, ".")
	}
	if err != nil {
		_ = s.uploads.RemoveAll(id)
		return "", fmt.Errorf("create multipart upload: %w", err)
	}
	return id, nil
}

func writeSynced(r *os.Root, name string, data []byte) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(r *os.Root, name string) error {
	d, err := r.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	_ = d.Close()
	return err
}

// loadUpload reads the metadata of upload id and checks that it belongs to
// bucket/key.
func (s *Store) loadUpload(bucket, key, id string) (uploadMeta, error) {
	if !validUploadID(id) {
		return uploadMeta{}, noSuchUpload(id)
	}
	data, err := s.uploads.ReadFile(id + "/" + uploadMetaFile)
	if err != nil {
		if isNotExist(err) {
			return uploadMeta{}, noSuchUpload(id)
		}
		return uploadMeta{}, fmt.Errorf("read upload %s: %w", id, err)
	}
	var m uploadMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return uploadMeta{}, fmt.Errorf("read upload %s: %w", id, err)
	}
	if m.Bucket != bucket || m.Key != key {
		return uploadMeta{}, noSuchUpload(id)
	}
	return m, nil
}

// UploadPart stores part number part (1..MaxMultipartParts) of an upload
// and returns its quoted ETag. size is the declared length (-1 unknown);
// contentMD5, if set, is verified (BadDigest). Uploading a part number again
// replaces it.
func (s *Store) UploadPart(ctx context.Context, bucket, key, uploadID string, part int, body io.Reader, size int64,
	contentMD5 []byte) (string, error) {
	if _, err := s.lookup(bucket, key); err != nil {
		return "", err
	}
	if part < 1 || part > s.maxParts {
		return "", errorf(CodeInvalidArgument, "part number must be an integer between 1 and %d", s.maxParts)
	}
	if size > maxPartSize {
		return "", errorf(CodeEntityTooLarge, "a part may be at most %d bytes", int64(maxPartSize))
	}
	if _, err := s.loadUpload(bucket, key, uploadID); err != nil {
		return "", err
	}
	st, err := s.stage(ctx, "part", body, size, contentMD5)
	if err != nil {
		return "", err
	}
	defer st.discard()
	err = st.f.Sync()
	if cerr := st.f.Close(); err == nil {
		err = cerr
	}
	st.f = nil
	if err != nil {
		return "", fmt.Errorf("write part: %w", err)
	}
	etag := hashHex(st.hash)
	name := fmt.Sprintf("%05d.%s", part, etag)

	unlock := s.lockUpload(uploadID)
	defer unlock()
	if _, err := s.loadUpload(bucket, key, uploadID); err != nil {
		return "", err // aborted or completed meanwhile
	}
	d, err := s.uploads.OpenFile(uploadID, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", fmt.Errorf("open upload %s: %w", uploadID, err)
	}
	defer d.Close()
	err = withFd(s.staging, func(sfd int) error {
		return withFd(d, func(fd int) error { return unix.Renameat(sfd, st.name, fd, name) })
	})
	if err != nil {
		return "", fmt.Errorf("store part: %w", err)
	}
	st.done = true
	// Drop an earlier upload of the same part number.
	old, err := readParts(d)
	if err != nil {
		return "", err
	}
	for _, p := range old[part] {
		if p.file != name {
			_ = s.uploads.Remove(uploadID + "/" + p.file)
		}
	}
	if err := d.Sync(); err != nil {
		return "", fmt.Errorf("store part: %w", err)
	}
	return `"` + etag + `"`, nil
}

// partFile is a part file found in an upload directory.
type partFile struct {
	file string
	etag string // unquoted
	info fs.FileInfo
}

// readParts maps part numbers to the part files of an upload directory.
func readParts(d *os.File) (map[int][]partFile, error) {
	if _, err := d.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read parts: %w", err)
	}
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("read parts: %w", err)
	}
	out := make(map[int][]partFile)
	for _, de := range des {
		num, etag, ok := strings.Cut(de.Name(), ".")
		if !ok || len(etag) != 32 || !de.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out[n] = append(out[n], partFile{file: de.Name(), etag: etag, info: fi})
	}
	return out, nil
}

// latest returns the most recently written of several files of one part.
func latest(ps []partFile) partFile {
	return slices.MaxFunc(ps, func(a, b partFile) int { return a.info.ModTime().Compare(b.info.ModTime()) })
}

// partSize returns the plaintext size of a part file.
func (s *Store) partSize(uploadID string, p partFile) (int64, error) {
	f, err := s.uploads.Open(uploadID + "/" + p.file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	enc, err := sniffEncrypted(f, p.info.Size())
	if err != nil || !enc {
		return p.info.Size(), err
	}
	return sse.PlaintextSize(p.info.Size())
}

// ListParts returns the parts with numbers above marker, at most max
// (default and maximum 1000); next is the marker of the following page.
func (s *Store) ListParts(ctx context.Context, bucket, key, uploadID string, marker, max int) (
	parts []PartInfo, truncated bool, next int, err error) {
	if _, err := s.lookup(bucket, key); err != nil {
		return nil, false, 0, err
	}
	if _, err := s.loadUpload(bucket, key, uploadID); err != nil {
		return nil, false, 0, err
	}
	if max <= 0 || max > MaxListParts {
		max = MaxListParts
	}
	d, err := s.uploads.OpenFile(uploadID, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		if isNotExist(err) {
			return nil, false, 0, noSuchUpload(uploadID)
		}
		return nil, false, 0, fmt.Errorf("list parts: %w", err)
	}
	all, err := readParts(d)
	_ = d.Close()
	if err != nil {
		return nil, false, 0, err
	}
	nums := make([]int, 0, len(all))
	for n := range all {
		if n > marker {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	for _, n := range nums {
		if err := ctxErr(ctx, "list parts"); err != nil {
			return nil, false, 0, err
		}
		if len(parts) == max {
			return parts, true, parts[len(parts)-1].Number, nil
		}
		p := latest(all[n])
		size, err := s.partSize(uploadID, p)
		if err != nil {
			if isNotExist(err) {
				continue
			}
			return nil, false, 0, fmt.Errorf("list parts: %w", err)
		}
		parts = append(parts, PartInfo{Number: n, ETag: `"` + p.etag + `"`, Size: size,
			LastModified: p.info.ModTime().UTC()})
	}
	if len(parts) > 0 {
		next = parts[len(parts)-1].Number
	}
	return parts, false, next, nil
}

// CompleteMultipart assembles the listed parts (ascending part numbers,
// ETags as UploadPart returned them, every part but the last at least
// MinPartSize) into bucket/key and publishes it atomically under o's
// conditions (IfNoneMatch, IfMatch). The ETag is the hash of the part
// hashes followed by "-<number of parts>". On success the upload is gone;
// if a condition fails it stays, so the client may retry or abort.
func (s *Store) CompleteMultipart(ctx context.Context, bucket, key, uploadID string, parts []CompletedPart,
	o PutOptions) (ObjectInfo, error) {
	b, err := s.lookup(bucket, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	if len(parts) == 0 {
		return ObjectInfo{}, errorf(CodeInvalidArgument, "you must specify at least one part")
	}
	if len(parts) > s.maxParts {
		return ObjectInfo{}, errorf(CodeInvalidArgument, "at most %d parts are allowed", s.maxParts)
	}
	for i := 1; i < len(parts); i++ {
		if parts[i].Number <= parts[i-1].Number {
			return ObjectInfo{}, errorf(CodeInvalidPartOrder, "the list of parts was not in ascending order; "+
				"part %d follows part %d", parts[i].Number, parts[i-1].Number)
		}
	}
	unlock := s.lockUpload(uploadID)
	defer unlock()
	um, err := s.loadUpload(bucket, key, uploadID)
	if err != nil {
		return ObjectInfo{}, err
	}
	d, err := s.uploads.OpenFile(uploadID, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("complete multipart upload: %w", err)
	}
	all, err := readParts(d)
	_ = d.Close()
	if err != nil {
		return ObjectInfo{}, err
	}
	chosen := make([]partFile, len(parts))
	for i, cp := range parts {
		want := strings.Trim(strings.TrimSpace(cp.ETag), `"`)
		idx := slices.IndexFunc(all[cp.Number], func(p partFile) bool { return p.etag == want })
		if idx < 0 {
			return ObjectInfo{}, errorf(CodeInvalidPart, "part %d with ETag %s was not uploaded (or was replaced)",
				cp.Number, cp.ETag)
		}
		chosen[i] = all[cp.Number][idx]
	}
	st, err := s.newStaged("complete")
	if err != nil {
		return ObjectInfo{}, err
	}
	defer st.discard()
	hashes := make([]byte, 0, 16*len(chosen))
	if err := s.concat(ctx, st, uploadID, chosen, parts, &hashes); err != nil {
		return ObjectInfo{}, err
	}
	m := &meta{ETag: hashHex(xxh3.Hash128(hashes)) + "-" + strconv.Itoa(len(parts)),
		ContentType: um.ContentType, User: um.User, Checksums: um.Checksums, Encrypted: s.enc != nil}
	info, err := s.commit(ctx, b, key, st, m, o)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := s.uploads.RemoveAll(uploadID); err != nil {
		s.log.Warn("bucket store: cannot remove completed upload", "upload", uploadID, "err", err)
	}
	return info, nil
}

// concat writes the chosen parts, in order, into st (encrypting when the
// store encrypts) and appends each part's hash to hashes. Plaintext parts
// into a plaintext object are copied by the kernel (copy_file_range).
func (s *Store) concat(ctx context.Context, st *staged, uploadID string, chosen []partFile, parts []CompletedPart,
	hashes *[]byte) error {
	var w io.Writer = st.f
	var ew io.WriteCloser
	if s.enc != nil {
		var err error
		if ew, err = sse.NewWriter(ctx, st.f, s.enc); err != nil {
			return fmt.Errorf("encrypt: %w", err)
		}
		w = ew
	}
	bp := s.getBuf()
	defer s.putBuf(bp)
	for i, p := range chosen {
		if err := ctxErr(ctx, "complete multipart upload"); err != nil {
			return err
		}
		raw, err := hex.DecodeString(p.etag)
		if err != nil {
			return errorf(CodeInvalidPart, "part %d has a malformed ETag", parts[i].Number)
		}
		*hashes = append(*hashes, raw...)
		n, err := s.copyPart(ctx, w, ew == nil, uploadID, p, *bp)
		if err != nil {
			return err
		}
		if i < len(chosen)-1 && n < s.minPart {
			return errorf(CodeEntityTooSmall, "part %d is %d bytes; every part but the last must be at least %d bytes",
				parts[i].Number, n, s.minPart)
		}
		st.size += n
	}
	if ew != nil {
		if err := ew.Close(); err != nil {
			return fmt.Errorf("encrypt: %w", err)
		}
	}
	return nil
}

// copyPart appends the plaintext of part p to w and returns its length.
func (s *Store) copyPart(ctx context.Context, w io.Writer, wIsFile bool, uploadID string, p partFile, buf []byte) (int64, error) {
	f, err := s.uploads.Open(uploadID + "/" + p.file)
	if err != nil {
		if isNotExist(err) {
			return 0, errorf(CodeInvalidPart, "part file %s is gone", p.file)
		}
		return 0, fmt.Errorf("open part: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat part: %w", err)
	}
	enc, err := sniffEncrypted(f, fi.Size())
	if err != nil {
		return 0, err
	}
	var n int64
	switch {
	case enc:
		if s.enc == nil {
			return 0, fmt.Errorf("part %s is encrypted but no encryption key is configured", p.file)
		}
		r, err := sse.Open(ctx, f, fi.Size(), s.enc)
		if err != nil {
			return 0, fmt.Errorf("decrypt part: %w", err)
		}
		n, err = io.CopyBuffer(writerOnly{w}, readerOnly{r.NewRangeReader(0, -1)}, buf)
		if err != nil {
			return 0, fmt.Errorf("copy part: %w", err)
		}
	case wIsFile:
		// *os.File to *os.File: copy_file_range.
		n, err = io.Copy(w, &io.LimitedReader{R: f, N: fi.Size()})
	default:
		n, err = io.CopyBuffer(writerOnly{w}, readerOnly{f}, buf)
	}
	if err != nil {
		return 0, fmt.Errorf("copy part: %w", err)
	}
	return n, nil
}

// AbortMultipart discards an upload and its parts.
func (s *Store) AbortMultipart(ctx context.Context, bucket, key, uploadID string) error {
	if _, err := s.lookup(bucket, key); err != nil {
		return err
	}
	if err := ctxErr(ctx, "abort multipart upload"); err != nil {
		return err
	}
	unlock := s.lockUpload(uploadID)
	defer unlock()
	if _, err := s.loadUpload(bucket, key, uploadID); err != nil {
		return err
	}
	if err := s.uploads.RemoveAll(uploadID); err != nil {
		return fmt.Errorf("abort multipart upload: %w", err)
	}
	return nil
}

// ListMultipartUploads returns the in-progress uploads of bucket whose key
// starts with prefix, ordered by key, then initiation time.
func (s *Store) ListMultipartUploads(ctx context.Context, bucket, prefix string) ([]Upload, error) {
	if _, err := s.bucket(bucket); err != nil {
		return nil, err
	}
	d, err := s.uploads.Open(".")
	if err != nil {
		return nil, fmt.Errorf("list uploads: %w", err)
	}
	des, err := d.ReadDir(-1)
	_ = d.Close()
	if err != nil {
		return nil, fmt.Errorf("list uploads: %w", err)
	}
	var out []Upload
	for _, de := range des {
		if err := ctxErr(ctx, "list uploads"); err != nil {
			return nil, err
		}
		if !de.IsDir() || !validUploadID(de.Name()) {
			continue
		}
		data, err := s.uploads.ReadFile(de.Name() + "/" + uploadMetaFile)
		if err != nil {
			continue // being created, completed or aborted
		}
		var m uploadMeta
		if json.Unmarshal(data, &m) != nil || m.Bucket != bucket || !strings.HasPrefix(m.Key, prefix) {
			continue
		}
		out = append(out, Upload{Key: m.Key, UploadID: de.Name(), Initiated: m.Initiated})
	}
	slices.SortFunc(out, func(a, b Upload) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := a.Initiated.Compare(b.Initiated); c != 0 {
			return c
		}
		return strings.Compare(a.UploadID, b.UploadID)
	})
	return out, nil
}

// cleanUploads removes upload directories without metadata (a crash during
// CreateMultipart) older than staleAfter.
func (s *Store) cleanUploads() {
	d, err := s.uploads.Open(".")
	if err != nil {
		return
	}
	des, err := d.ReadDir(-1)
	_ = d.Close()
	if err != nil {
		return
	}
	cutoff := s.now().Add(-staleAfter)
	for _, de := range des {
		fi, err := de.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue
		}
		if _, err := s.uploads.Stat(de.Name() + "/" + uploadMetaFile); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := s.uploads.RemoveAll(de.Name()); err == nil {
			s.log.Info("bucket store: removed incomplete multipart upload directory", "upload", de.Name())
		}
	}
}
