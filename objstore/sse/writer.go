package sse

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
)

var errWriterClosed = errors.New("sse: write to closed writer")

// writer encrypts a stream into segments. A full segment is sealed only once
// more data arrives, so the last segment (sealed by Close) is never empty
// unless the whole object is.
type writer struct {
	w      io.Writer
	aead   cipher.AEAD
	fixed  [fixedSize]byte
	nonce  [nonceSize]byte
	buf    []byte // len SegmentSize+TagSize; buf[:n] is buffered plaintext
	n      int
	seg    int64 // index of the next segment to seal
	err    error // sticky
	closed bool
}

// NewWriter returns a writer that encrypts everything written to it into w.
// It draws a fresh random DEK and nonce prefix, wraps the DEK with kw's current
// key and writes the header to w before returning. Close seals the last
// (possibly partial, or for an empty object empty) segment marked final; it
// does not close w. Nothing is written to w in plaintext. Write allocates
// nothing; the writer holds one segment buffer. Errors are sticky.
func NewWriter(ctx context.Context, w io.Writer, kw KeyWrapper) (io.WriteCloser, error) {
	if kw == nil {
		return nil, errors.New("sse: nil KeyWrapper")
	}
	var prefix [noncePrefixLen]byte
	dek := make([]byte, KeySize)
	defer clear(dek)
	if _, err := rand.Read(dek); err != nil {
		return nil, fmt.Errorf("sse: new data key: %w", err)
	}
	if _, err := rand.Read(prefix[:]); err != nil {
		return nil, fmt.Errorf("sse: new nonce prefix: %w", err)
	}
	ew := &writer{w: w, fixed: newFixedHeader(prefix[:])}
	keyID, wrapped, err := kw.Wrap(ctx, dek)
	if err != nil {
		return nil, fmt.Errorf("sse: wrap data key: %w", err)
	}
	if err := checkWrapResult(keyID, wrapped); err != nil {
		return nil, err
	}
	hdr := make([]byte, HeaderSize)
	copy(hdr, ew.fixed[:])
	if err := sealSlot(hdr[slotAOffset:slotAOffset+slotSize], dek, ew.fixed[:], 1, keyID, wrapped); err != nil {
		return nil, err
	}
	if ew.aead, err = dataAEAD(dek, ew.fixed[:]); err != nil {
		return nil, err
	}
	if _, err := w.Write(hdr); err != nil {
		return nil, fmt.Errorf("sse: write header: %w", err)
	}
	ew.buf = make([]byte, segmentSpan)
	return ew, nil
}

// Write buffers and encrypts p.
func (ew *writer) Write(p []byte) (int, error) {
	if ew.closed {
		return 0, errWriterClosed
	}
	if ew.err != nil {
		return 0, ew.err
	}
	total := 0
	for len(p) > 0 {
		if ew.n == SegmentSize {
			// More data follows, so the buffered segment is not the last.
			if err := ew.seal(ew.buf[:ew.n], false); err != nil {
				return total, err
			}
		}
		if ew.n == 0 && len(p) > SegmentSize {
			// A whole segment with more after it: seal straight from p.
			if err := ew.seal(p[:SegmentSize], false); err != nil {
				return total, err
			}
			p, total = p[SegmentSize:], total+SegmentSize
			continue
		}
		c := copy(ew.buf[ew.n:SegmentSize], p)
		ew.n += c
		p, total = p[c:], total+c
	}
	return total, nil
}

// seal encrypts plain (ew.buf[:n] or a full segment of the caller's buffer)
// into ew.buf and writes it out.
func (ew *writer) seal(plain []byte, final bool) error {
	if ew.seg >= maxSegments {
		ew.err = fmt.Errorf("sse: object exceeds %d bytes", int64(MaxPlaintextSize))
		return ew.err
	}
	segmentNonce(&ew.nonce, noncePrefixOf(ew.fixed[:]), ew.seg, final)
	ct := ew.aead.Seal(ew.buf[:0], ew.nonce[:], plain, ew.fixed[:])
	ew.n = 0
	if _, err := ew.w.Write(ct); err != nil {
		ew.err = fmt.Errorf("sse: write segment %d: %w", ew.seg, err)
		return ew.err
	}
	ew.seg++
	return nil
}

// Close seals the final segment. It does not close the underlying writer.
// Calling Close again returns the first result.
func (ew *writer) Close() error {
	if ew.closed {
		return ew.err
	}
	ew.closed = true
	if ew.err == nil {
		_ = ew.seal(ew.buf[:ew.n], true)
	}
	clear(ew.buf)
	return ew.err
}
