package sigv4

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"hash"
	"io"
	"net/http"
)

// checkReader passes a plain (not aws-chunked) body through and checks it at
// EOF against a declared SHA-256 (x-amz-content-sha256) and header
// checksums.
type checkReader struct {
	src     io.ReadCloser
	sha     hash.Hash // nil when the payload hash is not checked
	wantSHA [sha256.Size]byte
	sums    []*digest
	err     error
}

func newCheckReader(src io.ReadCloser, wantSHA []byte, sums []*digest) *checkReader {
	c := &checkReader{src: src, sums: sums}
	if wantSHA != nil {
		c.sha = sha256.New()
		copy(c.wantSHA[:], wantSHA)
	}
	return c
}

// Read implements io.Reader.
func (c *checkReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.src.Read(p)
	if n > 0 {
		if c.sha != nil {
			c.sha.Write(p[:n])
		}
		for _, d := range c.sums {
			d.h.Write(p[:n])
		}
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, io.EOF):
		if e := c.finish(); e != nil {
			c.err = e
			return n, e
		}
		c.err = io.EOF
		return n, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.err = errIncompleteBody(err)
		return n, c.err
	default:
		return n, err
	}
}

func (c *checkReader) finish() *Error {
	if c.sha != nil {
		var buf [sha256.Size]byte
		if subtle.ConstantTimeCompare(c.sha.Sum(buf[:0]), c.wantSHA[:]) != 1 {
			return newError("XAmzContentSHA256Mismatch", http.StatusBadRequest,
				"The provided 'x-amz-content-sha256' header does not match what was computed.")
		}
	}
	for _, d := range c.sums {
		if e := d.check(); e != nil {
			return e
		}
	}
	return nil
}

// Close closes the underlying body.
func (c *checkReader) Close() error { return c.src.Close() }
