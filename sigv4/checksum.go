package sigv4

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"net/http"
	"strings"
	"sync"
)

// checksumPrefix starts every S3 checksum header name.
const checksumPrefix = "x-amz-checksum-"

// newChecksum returns a hash for an S3 checksum algorithm name (the suffix
// of x-amz-checksum-<name>) and its digest size, or nil if unknown.
func newChecksum(alg string) (hash.Hash, int) {
	switch alg {
	case "crc32":
		return crc32.NewIEEE(), crc32.Size
	case "crc32c":
		return crc32.New(crc32.MakeTable(crc32.Castagnoli)), crc32.Size
	case "crc64nvme":
		return newCRC64NVME(), 8
	case "sha1":
		return sha1.New(), sha1.Size
	case "sha256":
		return sha256.New(), sha256.Size
	}
	return nil, 0
}

// digest checks the payload against one declared checksum.
type digest struct {
	name string // header or trailer name, for messages
	h    hash.Hash
	size int
	want []byte // nil until known (trailers)
}

// check compares the computed digest with the declared one.
func (d *digest) check() *Error {
	var buf [sha256.Size]byte
	got := d.h.Sum(buf[:0])
	if d.want == nil || subtle.ConstantTimeCompare(got, d.want) != 1 {
		return errBadDigest(d.name)
	}
	return nil
}

// setWant decodes a base64 checksum value; it reports false when value is
// not the base64 of a digest of the right size.
func (d *digest) setWant(value string) bool {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value))
	if err != nil || len(b) != d.size {
		return false
	}
	d.want = b
	return true
}

// checksumAlgorithm returns the algorithm of a lower-case checksum header
// name, or "" if name is not one.
func checksumAlgorithm(lower string) string {
	alg, ok := strings.CutPrefix(lower, checksumPrefix)
	if !ok {
		return ""
	}
	return alg
}

// headerDigests returns the checks declared by the request headers:
// Content-MD5 and x-amz-checksum-<alg> with a known algorithm. The
// x-amz-checksum-* headers of CompleteMultipartUpload (POST ?uploadId=)
// describe the whole object, not the body, and are skipped.
func headerDigests(r *http.Request, params []queryParam) ([]*digest, *Error) {
	var ds []*digest
	if v := r.Header.Get(hdrContentMD5); v != "" {
		d := &digest{name: "Content-MD5", h: md5.New(), size: md5.Size}
		if !d.setWant(v) {
			return nil, newError("InvalidDigest", http.StatusBadRequest, "The Content-MD5 you specified was invalid.")
		}
		ds = append(ds, d)
	}
	if r.Method == http.MethodPost {
		for _, p := range params {
			if p.key == "uploadId" {
				return ds, nil
			}
		}
	}
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		alg := checksumAlgorithm(lk)
		if alg == "" || alg == "algorithm" || alg == "type" || alg == "mode" {
			continue
		}
		h, size := newChecksum(alg)
		if h == nil {
			return nil, errInvalidRequest("The checksum algorithm in header %s is not supported.", lk)
		}
		d := &digest{name: lk, h: h, size: size}
		if len(vs) != 1 || !d.setWant(vs[0]) {
			return nil, errInvalidRequest("Value for %s header is invalid.", lk)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// crc64NVMEPoly is the reflected CRC-64/NVME polynomial.
const crc64NVMEPoly = 0x9A6C9329AC4BC9B5

// crc64Tables holds the slicing-by-8 tables for CRC-64/NVME; computed once,
// never written after.
var crc64Tables = sync.OnceValue(func() *[8][256]uint64 {
	t := new([8][256]uint64)
	for i := range 256 {
		c := uint64(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ crc64NVMEPoly
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for i := range 256 {
		c := t[0][i]
		for j := 1; j < 8; j++ {
			c = t[0][c&0xff] ^ c>>8
			t[j][i] = c
		}
	}
	return t
})

// crc64NVME is a hash.Hash for CRC-64/NVME (init and xorout all ones).
type crc64NVME struct {
	crc uint64
	tab *[8][256]uint64
}

func newCRC64NVME() *crc64NVME { return &crc64NVME{tab: crc64Tables()} }

func (c *crc64NVME) Write(p []byte) (int, error) {
	n := len(p)
	crc := ^c.crc
	t := c.tab
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][crc&0xff] ^ t[6][crc>>8&0xff] ^ t[5][crc>>16&0xff] ^ t[4][crc>>24&0xff] ^
			t[3][crc>>32&0xff] ^ t[2][crc>>40&0xff] ^ t[1][crc>>48&0xff] ^ t[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	c.crc = ^crc
	return n, nil
}

func (c *crc64NVME) Sum64() uint64 { return c.crc }

func (c *crc64NVME) Sum(b []byte) []byte { return binary.BigEndian.AppendUint64(b, c.crc) }

func (c *crc64NVME) Reset() { c.crc = 0 }

func (c *crc64NVME) Size() int { return 8 }

func (c *crc64NVME) BlockSize() int { return 1 }
