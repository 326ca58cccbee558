package s3api

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// chunkedReader decodes an aws-chunked payload WITHOUT checking chunk
// signatures or trailer checksums. It is used only when the server runs
// without authentication (Options.Resolver == nil), where there is no secret
// to check signatures with; authenticated requests are decoded and checked by
// package sigv4.
type chunkedReader struct {
	src      io.ReadCloser
	br       *bufio.Reader
	left     int64 // bytes left in the current chunk
	declared int64 // x-amz-decoded-content-length, -1 unknown
	total    int64
	done     bool
	err      error
}

const (
	maxChunkLine = 4 << 10
	maxTrailers  = 64
)

func newChunkedReader(src io.ReadCloser, declared int64) *chunkedReader {
	return &chunkedReader{src: src, br: bufio.NewReaderSize(src, 64<<10), declared: declared}
}

func errIncompleteBody(msg string) *apiError {
	return errorf("IncompleteBody", http.StatusBadRequest, msg)
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.nextChunk(); err != nil {
			c.err = err
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	c.total += int64(n)
	if c.declared >= 0 && c.total > c.declared {
		c.err = errorf("InvalidRequest", http.StatusBadRequest, "the payload is longer than x-amz-decoded-content-length")
		return 0, c.err
	}
	if err == io.EOF {
		err = errIncompleteBody("the aws-chunked payload ended inside a chunk")
	}
	if err != nil {
		c.err = err
		return n, err
	}
	if c.left == 0 {
		if err := c.expectCRLF(); err != nil {
			c.err = err
			return n, err
		}
	}
	return n, nil
}

// nextChunk reads a chunk header; at the final (empty) chunk it consumes the
// trailers and checks the decoded length.
func (c *chunkedReader) nextChunk() error {
	line, err := c.line()
	if errors.Is(err, io.EOF) {
		return errIncompleteBody("the aws-chunked payload ended before its final chunk")
	}
	if err != nil {
		return err
	}
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
	if err != nil || size < 0 || size > 1<<40 {
		return errorf("InvalidRequest", http.StatusBadRequest, "malformed aws-chunked chunk header")
	}
	if size > 0 {
		c.left = size
		return nil
	}
	c.done = true
	for i := 0; ; i++ {
		l, err := c.line()
		if errors.Is(err, io.EOF) && len(l) == 0 {
			break // some clients omit the final CRLF
		}
		if err != nil {
			return err
		}
		if len(l) == 0 {
			break
		}
		if i >= maxTrailers {
			return errorf("InvalidRequest", http.StatusBadRequest, "too many aws-chunked trailers")
		}
	}
	if c.declared >= 0 && c.total != c.declared {
		return errIncompleteBody("the payload is shorter than x-amz-decoded-content-length")
	}
	return nil
}

// line reads one CRLF-terminated line of at most maxChunkLine bytes, without
// the line end. At the end of input it returns io.EOF (the partial line, if
// any, with io.ErrUnexpectedEOF mapped to IncompleteBody).
func (c *chunkedReader) line() ([]byte, error) {
	var out []byte
	for {
		frag, err := c.br.ReadSlice('\n')
		out = append(out, frag...)
		if len(out) > maxChunkLine {
			return nil, errorf("InvalidRequest", http.StatusBadRequest, "aws-chunked header line too long")
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(out) == 0 {
				return nil, io.EOF
			}
			return nil, errIncompleteBody("the aws-chunked payload ended inside a header line")
		}
		return nil, err
	}
	out = bytes.TrimSuffix(out, []byte("\n"))
	out = bytes.TrimSuffix(out, []byte("\r"))
	return out, nil
}

func (c *chunkedReader) expectCRLF() error {
	l, err := c.line()
	if errors.Is(err, io.EOF) {
		return errIncompleteBody("the aws-chunked payload ended after a chunk")
	}
	if err != nil {
		return err
	}
	if len(l) != 0 {
		return errorf("InvalidRequest", http.StatusBadRequest, "malformed aws-chunked payload: data after chunk")
	}
	return nil
}

func (c *chunkedReader) Close() error { return c.src.Close() }
