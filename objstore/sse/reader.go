package sse

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Reader decrypts an encrypted object. It is safe for concurrent use: ReadAt
// may be called from several goroutines, and each range reader is independent.
type Reader struct {
	ra    io.ReaderAt
	size  int64 // plaintext size
	nseg  int64
	aead  cipher.AEAD
	fixed [fixedSize]byte
	keyID string
	bufs  sync.Pool // of *segBuf
}

// segBuf is scratch space for decrypting one segment: ct holds the largest
// segment of its object with its tag (at most segmentSpan bytes), so that a
// small object, a manifest say, costs a small buffer rather than a whole
// segment's.
type segBuf struct {
	ct    []byte
	nonce [nonceSize]byte
}

// Open reads and unwraps the header of the object in ra (size is the
// ciphertext size). It fails with ErrNotEncrypted if the object lacks the
// header magic, with ErrCorrupt if the header or the size is malformed or no
// key slot authenticates, and with ErrUnknownKey if the DEK is wrapped by a key
// kw does not hold. Data segments are verified lazily, as they are read (the
// single segment of an empty object is verified by Open).
func Open(ctx context.Context, ra io.ReaderAt, size int64, kw KeyWrapper) (*Reader, error) {
	hdr, err := readHeader(ra, size)
	if err != nil {
		return nil, err
	}
	psize, err := PlaintextSize(size)
	if err != nil {
		return nil, err
	}
	u, err := unlock(ctx, hdr, kw)
	if err != nil {
		return nil, err
	}
	defer clear(u.dek)
	r := &Reader{ra: ra, size: psize, nseg: numSegments(psize), keyID: u.slots[u.active].keyID}
	copy(r.fixed[:], hdr[:fixedSize])
	if r.aead, err = dataAEAD(u.dek, r.fixed[:]); err != nil {
		return nil, err
	}
	span := r.segPlainLen(0) + TagSize // the first segment is the largest
	r.bufs.New = func() any { return &segBuf{ct: make([]byte, span)} }
	if psize == 0 {
		// No read ever touches the one (empty, final) segment, so verify it
		// here: otherwise truncating an object to HeaderSize+TagSize bytes
		// would pass as an empty object.
		sb := segBuf{ct: make([]byte, span)}
		if _, err := r.decryptSegment(0, &sb, nil); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Size is the plaintext size.
func (r *Reader) Size() int64 { return r.size }

// KeyID is the warehouse key id the DEK is currently wrapped with (the id in
// the key slot Open used).
func (r *Reader) KeyID() string { return r.keyID }

// segPlainLen is the plaintext length of segment i.
func (r *Reader) segPlainLen(i int64) int {
	if i < r.nseg-1 {
		return SegmentSize
	}
	return int(r.size - (r.nseg-1)*SegmentSize)
}

// decryptSegment reads segment i into sb and decrypts it. If dst is non-nil it
// must have room for the whole segment's plaintext, which is decrypted there;
// otherwise it is decrypted in place in sb.ct. It returns the plaintext.
func (r *Reader) decryptSegment(i int64, sb *segBuf, dst []byte) ([]byte, error) {
	pl := r.segPlainLen(i)
	ct := sb.ct[:pl+TagSize]
	n, err := r.ra.ReadAt(ct, HeaderSize+i*segmentSpan)
	if n < len(ct) {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("sse: segment %d: short read: %w", i, ErrCorrupt)
		}
		return nil, fmt.Errorf("sse: read segment %d: %w", i, err)
	}
	segmentNonce(&sb.nonce, noncePrefixOf(r.fixed[:]), i, i == r.nseg-1)
	if dst == nil {
		dst = ct
	}
	pt, err := r.aead.Open(dst[:0], sb.nonce[:], ct, r.fixed[:])
	if err != nil {
		return nil, fmt.Errorf("sse: segment %d fails authentication: %w", i, ErrCorrupt)
	}
	return pt, nil
}

// ReadAt implements io.ReaderAt over the plaintext. It decrypts only the
// segments that [off, off+len(p)) touches and verifies each one's tag; a
// segment that fails yields an error wrapping ErrCorrupt, with n counting the
// bytes decrypted before it. Reading past the end returns io.EOF.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("sse: negative offset %d", off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), r.size)
	sb := r.bufs.Get().(*segBuf)
	defer r.bufs.Put(sb)
	n := 0
	for pos := off; pos < end; {
		seg := pos / SegmentSize
		inSeg := int(pos - seg*SegmentSize)
		pl := r.segPlainLen(seg)
		want := int(min(end-pos, int64(pl-inSeg)))
		if inSeg == 0 && want == pl {
			if _, err := r.decryptSegment(seg, sb, p[n:n+pl]); err != nil {
				clear(p[n : n+pl])
				return n, err
			}
		} else {
			pt, err := r.decryptSegment(seg, sb, nil)
			if err != nil {
				return n, err
			}
			copy(p[n:n+want], pt[inSeg:])
			clear(pt)
		}
		n += want
		pos += int64(want)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// NewRangeReader returns a sequential reader of the plaintext [off, off+n),
// clamped to the object's end; n = -1 means to the end. It decrypts segment
// by segment into one segment buffer, so Read allocates nothing. A negative
// off, or n < -1, yields a reader that fails on first Read. A segment that
// fails authentication stops the reader with an error wrapping ErrCorrupt
// before any of its bytes are returned.
func (r *Reader) NewRangeReader(off, n int64) io.Reader {
	rr := &rangeReader{r: r, pos: off, cur: -1}
	switch {
	case off < 0 || n < -1:
		rr.err = fmt.Errorf("sse: invalid range offset %d length %d", off, n)
	case n == -1 || n > r.size-off:
		rr.end = r.size
	default:
		rr.end = off + n
	}
	return rr
}

// rangeReader reads a plaintext range sequentially.
type rangeReader struct {
	r     *Reader
	pos   int64
	end   int64
	sb    *segBuf
	plain []byte // decrypted plaintext of segment cur, in sb.ct
	cur   int64
	err   error
}

// Read implements io.Reader.
func (rr *rangeReader) Read(p []byte) (int, error) {
	if rr.err != nil {
		return 0, rr.err
	}
	if rr.pos >= rr.end {
		rr.finish(io.EOF)
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	seg := rr.pos / SegmentSize
	if seg != rr.cur {
		if rr.sb == nil {
			rr.sb = rr.r.bufs.Get().(*segBuf)
		}
		pt, err := rr.r.decryptSegment(seg, rr.sb, nil)
		if err != nil {
			rr.finish(err)
			return 0, err
		}
		rr.plain, rr.cur = pt, seg
	}
	avail := rr.plain[rr.pos-seg*SegmentSize:]
	if rem := rr.end - rr.pos; int64(len(avail)) > rem {
		avail = avail[:rem]
	}
	c := copy(p, avail)
	rr.pos += int64(c)
	return c, nil
}

// finish makes err sticky and returns the segment buffer, wiped, to the pool.
func (rr *rangeReader) finish(err error) {
	rr.err = err
	if rr.sb != nil {
		clear(rr.sb.ct)
		rr.r.bufs.Put(rr.sb)
		rr.sb, rr.plain = nil, nil
	}
}
