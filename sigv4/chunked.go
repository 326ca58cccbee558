package sigv4

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
)

// Limits of the aws-chunked decoder.
const (
	chunkBufferSize = 64 << 10 // bufio.Reader size over the raw body
	// MaxChunkLine is the longest chunk header or trailer line accepted.
	MaxChunkLine = 4 << 10
	// MaxSignedChunk is the largest signed chunk: a signed chunk is held in
	// memory until its signature is checked. Clients use 8 KiB to 8 MiB.
	MaxSignedChunk = 16 << 20
	// maxUnsignedChunk bounds an unsigned chunk (streamed, never buffered).
	// aws-sdk-go-v2 sends a body of known length as one chunk, so this is
	// the S3 object size limit.
	maxUnsignedChunk = 5 << 40
	maxTrailers      = 16
)

// chunkSigner checks the chain of chunk signatures of a streaming upload.
type chunkSigner struct {
	key           []byte
	payloadPrefix string // "AWS4-HMAC-SHA256-PAYLOAD\n<date>\n<scope>\n"
	trailerPrefix string // "AWS4-HMAC-SHA256-TRAILER\n<date>\n<scope>\n"
	prev          [sha256.Size]byte
	mac           hash.Hash
	sha           hash.Hash
}

func newChunkSigner(key []byte, amzDate, scope string, seed []byte) *chunkSigner {
	s := &chunkSigner{
		key:           key,
		payloadPrefix: "AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n",
		trailerPrefix: "AWS4-HMAC-SHA256-TRAILER\n" + amzDate + "\n" + scope + "\n",
		mac:           hmac.New(sha256.New, key),
		sha:           sha256.New(),
	}
	copy(s.prev[:], seed)
	return s
}

// verify checks the signature of one chunk (or, with trailer, of the
// canonical trailer block) and advances the chain on success.
func (s *chunkSigner) verify(data []byte, got []byte, trailer bool) bool {
	var sum, prevHex [2 * sha256.Size]byte
	s.sha.Reset()
	s.sha.Write(data)
	var h [sha256.Size]byte
	hex.Encode(sum[:], s.sha.Sum(h[:0]))
	hex.Encode(prevHex[:], s.prev[:])
	s.mac.Reset()
	if trailer {
		s.mac.Write([]byte(s.trailerPrefix))
		s.mac.Write(prevHex[:])
		s.mac.Write([]byte{'\n'})
	} else {
		s.mac.Write([]byte(s.payloadPrefix))
		s.mac.Write(prevHex[:])
		s.mac.Write([]byte("\n" + EmptySHA256 + "\n"))
	}
	s.mac.Write(sum[:])
	mac := s.mac.Sum(h[:0])
	if !hmac.Equal(mac, got) {
		return false
	}
	copy(s.prev[:], mac)
	return true
}

// chunkedReader decodes an aws-chunked body, checking chunk signatures,
// trailers, the decoded length and checksums; a problem is returned from
// Read (as an *Error) before io.EOF.
type chunkedReader struct {
	src      io.Closer
	br       *bufio.Reader
	sig      *chunkSigner // nil: chunks carry no signatures
	trailers bool         // trailing headers follow the final chunk
	declared map[string]*digest
	trailer  http.Header // trailing headers received, filled at the end
	sums     []*digest   // checks over the decoded payload (headers and trailers)
	want     int64       // declared decoded length, -1 unknown
	decoded  int64

	buf     []byte // signed: the current, verified chunk
	off     int
	left    int64 // unsigned: bytes left in the current chunk
	inChunk bool  // unsigned: a chunk's data is being read; CRLF follows
	eof     bool  // the final chunk and everything after it were checked
	err     error // sticky: io.EOF or the first failure
}

// chunkedOptions configures newChunkedReader.
type chunkedOptions struct {
	signer   *chunkSigner
	trailers bool
	declared []string // lower-case names from x-amz-trailer
	sums     []*digest
	want     int64
	trailer  http.Header
}

func newChunkedReader(src io.ReadCloser, o chunkedOptions) (*chunkedReader, *Error) {
	c := &chunkedReader{
		src:      src,
		br:       bufio.NewReaderSize(src, chunkBufferSize),
		sig:      o.signer,
		trailers: o.trailers,
		sums:     o.sums,
		want:     o.want,
		trailer:  o.trailer,
	}
	if len(o.declared) > maxTrailers {
		return nil, errInvalidRequest("Too many trailing headers declared in x-amz-trailer.")
	}
	if len(o.declared) > 0 {
		c.declared = make(map[string]*digest, len(o.declared))
	}
	for _, name := range o.declared {
		var d *digest
		if alg := checksumAlgorithm(name); alg != "" {
			h, size := newChecksum(alg)
			if h == nil {
				return nil, errInvalidRequest("The checksum algorithm in x-amz-trailer %s is not supported.", name)
			}
			d = &digest{name: name, h: h, size: size}
			c.sums = append(c.sums, d)
		}
		c.declared[name] = d
	}
	return c, nil
}

// Read implements io.Reader.
func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.sig != nil {
		for c.off == len(c.buf) {
			if err := c.advance(); err != nil {
				return 0, err
			}
		}
		n := copy(p, c.buf[c.off:])
		c.off += n
		return n, nil
	}
	for c.left == 0 {
		if err := c.advance(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.consumed(p[:n])
	if n == 0 && err != nil {
		c.err = readError(err)
		return 0, c.err
	}
	return n, nil
}

// WriteTo implements io.WriterTo: it writes verified chunks, and unsigned
// chunk data straight from the read buffer, without an extra copy.
func (c *chunkedReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if c.err != nil {
			if c.err == io.EOF {
				return total, nil
			}
			return total, c.err
		}
		if c.sig != nil {
			if c.off < len(c.buf) {
				n, err := w.Write(c.buf[c.off:])
				total += int64(n)
				c.off += n
				if err != nil {
					return total, err
				}
				continue
			}
			if err := c.advance(); err != nil && err != io.EOF {
				return total, err
			}
			continue
		}
		if c.left == 0 {
			if err := c.advance(); err != nil && err != io.EOF {
				return total, err
			}
			continue
		}
		b, err := c.br.Peek(int(min(c.left, int64(c.br.Size()))))
		if len(b) > 0 {
			c.consumed(b)
			n, werr := w.Write(b)
			total += int64(n)
			c.br.Discard(len(b))
			if werr != nil {
				return total, werr
			}
			if n < len(b) {
				return total, io.ErrShortWrite
			}
		}
		if err != nil && len(b) == 0 {
			c.err = readError(err)
			return total, c.err
		}
	}
}

// consumed accounts for unsigned chunk data handed to the caller.
func (c *chunkedReader) consumed(b []byte) {
	for _, d := range c.sums {
		d.h.Write(b)
	}
	c.left -= int64(len(b))
	c.decoded += int64(len(b))
}

// Close closes the underlying body.
func (c *chunkedReader) Close() error { return c.src.Close() }

// advance moves to the next chunk; it sets and returns c.err (io.EOF after
// the final checks passed).
func (c *chunkedReader) advance() error {
	if c.eof {
		c.err = io.EOF
		return c.err
	}
	var err error
	if c.sig != nil {
		err = c.nextSigned()
	} else {
		err = c.nextUnsigned()
	}
	if err != nil {
		c.err = err
		return err
	}
	if c.eof && c.off == len(c.buf) && c.left == 0 {
		c.err = io.EOF
		return c.err
	}
	return nil
}

func (c *chunkedReader) nextSigned() error {
	line, err := c.readLine()
	if err != nil {
		return err
	}
	size, sig, err := parseChunkHeader(line, true)
	if err != nil {
		return err
	}
	if size > MaxSignedChunk {
		return errInvalidRequest("Signed chunk of %d bytes exceeds the limit of %d bytes.", size, MaxSignedChunk)
	}
	if err := c.checkSize(size); err != nil {
		return err
	}
	if int64(cap(c.buf)) < size {
		c.buf = make([]byte, size)
	}
	c.buf = c.buf[:size]
	c.off = 0
	if size > 0 {
		if _, err := io.ReadFull(c.br, c.buf); err != nil {
			return readError(err)
		}
		if err := c.readCRLF(); err != nil {
			return err
		}
	}
	if !c.sig.verify(c.buf, sig, false) {
		return errChunkSignatureMismatch()
	}
	for _, d := range c.sums {
		d.h.Write(c.buf)
	}
	c.decoded += size
	if size == 0 {
		return c.finish()
	}
	return nil
}

func (c *chunkedReader) nextUnsigned() error {
	if c.inChunk {
		if err := c.readCRLF(); err != nil {
			return err
		}
		c.inChunk = false
	}
	line, err := c.readLine()
	if err != nil {
		return err
	}
	size, _, err := parseChunkHeader(line, false)
	if err != nil {
		return err
	}
	if size > maxUnsignedChunk {
		return errInvalidRequest("Chunk of %d bytes is too large.", size)
	}
	if err := c.checkSize(size); err != nil {
		return err
	}
	if size == 0 {
		return c.finish()
	}
	c.left = size
	c.inChunk = true
	return nil
}

func (c *chunkedReader) checkSize(size int64) error {
	if c.want >= 0 && size > c.want-c.decoded {
		return errInvalidRequest("The chunked payload is longer than x-amz-decoded-content-length.")
	}
	return nil
}

// finish reads what follows the final chunk and runs the final checks.
func (c *chunkedReader) finish() error {
	if c.trailers {
		if err := c.readTrailers(); err != nil {
			return err
		}
	} else {
		line, err := c.br.ReadSlice('\n')
		if err != nil && !(errors.Is(err, io.EOF) && len(line) == 0) {
			return readError(err)
		}
		if len(line) != 0 && string(line) != "\r\n" {
			return errInvalidRequest("Unexpected data after the final chunk.")
		}
	}
	c.eof = true
	if c.want >= 0 && c.decoded != c.want {
		return errIncompleteBody(nil)
	}
	for _, d := range c.sums {
		if e := d.check(); e != nil {
			return e
		}
	}
	return nil
}

func (c *chunkedReader) readTrailers() error {
	type kv struct{ name, value string }
	var got []kv
	var sig []byte
	for i := 0; ; i++ {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 {
				break // tolerate a missing final CRLF
			}
			return readError(err)
		}
		if len(line) > MaxChunkLine {
			return errInvalidRequest("Trailing header line too long.")
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		if len(line) == 0 {
			break
		}
		if i >= maxTrailers+1 {
			return errInvalidRequest("Too many trailing headers.")
		}
		n, v, ok := bytes.Cut(line, []byte{':'})
		name := strings.ToLower(string(bytes.TrimSpace(n)))
		value := string(bytes.TrimSpace(v))
		if !ok || name == "" {
			return errInvalidRequest("Malformed trailing header.")
		}
		if name == trailerSignatureKey {
			if sig != nil {
				return errInvalidRequest("Duplicate x-amz-trailer-signature.")
			}
			sig = make([]byte, sha256.Size)
			if len(value) != 2*sha256.Size {
				return errChunkSignatureMismatch()
			}
			if _, err := hex.Decode(sig, []byte(value)); err != nil {
				return errChunkSignatureMismatch()
			}
			continue
		}
		d, declared := c.declared[name]
		if !declared {
			return errInvalidRequest("Trailing header %s was not declared in x-amz-trailer.", name)
		}
		for _, g := range got {
			if g.name == name {
				return errInvalidRequest("Duplicate trailing header %s.", name)
			}
		}
		if d != nil && !d.setWant(value) {
			return errInvalidRequest("Value for trailing header %s is invalid.", name)
		}
		got = append(got, kv{name, value})
	}
	if len(got) != len(c.declared) {
		for name := range c.declared {
			found := false
			for _, g := range got {
				found = found || g.name == name
			}
			if !found {
				return errInvalidRequest("Trailing header %s declared in x-amz-trailer is missing.", name)
			}
		}
	}
	if c.sig != nil && (sig != nil || len(got) > 0) {
		if sig == nil {
			return errInvalidRequest("Missing x-amz-trailer-signature.")
		}
		sort.Slice(got, func(i, j int) bool { return got[i].name < got[j].name })
		var canon []byte
		for _, g := range got {
			canon = append(canon, g.name...)
			canon = append(canon, ':')
			canon = append(canon, g.value...)
			canon = append(canon, '\n')
		}
		if !c.sig.verify(canon, sig, true) {
			return errChunkSignatureMismatch()
		}
	}
	if c.trailer != nil {
		for _, g := range got {
			c.trailer[textproto.CanonicalMIMEHeaderKey(g.name)] = []string{g.value}
		}
	}
	return nil
}

// readLine reads one CRLF-terminated line of at most MaxChunkLine bytes
// and returns it without the CRLF. The slice is valid until the next read.
func (c *chunkedReader) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return nil, readError(err)
	}
	if len(line) > MaxChunkLine {
		return nil, errInvalidRequest("Chunk header line too long.")
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errInvalidRequest("Chunk header line is not CRLF-terminated.")
	}
	return line[:len(line)-2], nil
}

// readCRLF consumes the CRLF that ends a chunk's data.
func (c *chunkedReader) readCRLF() error {
	b, err := c.br.Peek(2)
	if err != nil {
		return readError(err)
	}
	if b[0] != '\r' || b[1] != '\n' {
		return errInvalidRequest("Chunk data is not followed by CRLF.")
	}
	c.br.Discard(2)
	return nil
}

// readError maps a read failure of the raw body to an *Error: a body that
// ends early is IncompleteBody; other errors (timeouts, size limits) are
// returned unchanged.
func readError(err error) error {
	if errors.Is(err, bufio.ErrBufferFull) {
		return errInvalidRequest("Chunk header or trailer line too long.")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errIncompleteBody(err)
	}
	return err
}

// parseChunkHeader parses "<hex-size>[;ext...]". With signed, the
// extension chunk-signature=<64 hex> is required and returned decoded.
func parseChunkHeader(line []byte, signed bool) (int64, []byte, error) {
	sizePart, ext, _ := bytes.Cut(line, []byte{';'})
	if len(sizePart) == 0 || len(sizePart) > 16 {
		return 0, nil, errInvalidRequest("Invalid chunk size.")
	}
	size, err := strconv.ParseUint(string(sizePart), 16, 64)
	if err != nil || size > 1<<62 {
		return 0, nil, errInvalidRequest("Invalid chunk size.")
	}
	if !signed {
		return int64(size), nil, nil
	}
	var sig []byte
	for len(ext) > 0 {
		var e []byte
		e, ext, _ = bytes.Cut(ext, []byte{';'})
		v, ok := bytes.CutPrefix(e, []byte("chunk-signature="))
		if !ok {
			continue
		}
		if sig != nil || len(v) != 2*sha256.Size {
			return 0, nil, errInvalidRequest("Invalid chunk signature.")
		}
		sig = make([]byte, sha256.Size)
		if _, err := hex.Decode(sig, v); err != nil {
			return 0, nil, errInvalidRequest("Invalid chunk signature.")
		}
	}
	if sig == nil {
		return 0, nil, errInvalidRequest("Missing chunk signature.")
	}
	return int64(size), sig, nil
}
