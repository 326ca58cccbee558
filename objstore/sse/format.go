package sse

import (
	"context"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

const (
	// SegmentSize is the number of plaintext bytes per segment (64 KiB).
	SegmentSize = 64 << 10
	// TagSize is the per-segment overhead: one AES-GCM tag.
	TagSize = 16
	// HeaderSize is the fixed size of the object header (two key slots).
	HeaderSize = 1024
	// MaxPlaintextSize is the largest object the format can hold (2^32
	// segments, 256 TiB).
	MaxPlaintextSize = maxSegments * SegmentSize
)

const (
	magic          = "FLOESSE1"
	formatVersion  = 1
	suiteV1        = 1
	fixedSize      = 32
	noncePrefixLen = 7
	nonceSize      = 12
	macSize        = sha256.Size

	slotSize       = 480
	slotAOffset    = 32
	slotBOffset    = 512
	reservedOffset = slotBOffset + slotSize
	slotCRCOffset  = slotSize - 4
	slotHeadLen    = 8 + 1 + 2
	// slotPayloadMax bounds len(keyID)+len(wrapped) in a slot.
	slotPayloadMax = slotCRCOffset - slotHeadLen - macSize
	maxSlotKeyID   = 255

	maxSegments = 1 << 32
	segmentSpan = SegmentSize + TagSize

	dataKeyLabel = "floe-sse v1 data\x00"
	macKeyLabel  = "floe-sse v1 slot mac\x00"
	slotMACLabel = "floe-sse v1 slot\x00"
)

var slotOffsets = [2]int{slotAOffset, slotBOffset}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// IsEncrypted reports whether prefix, the first bytes of a file, starts with
// the header magic. It needs at least 8 bytes.
func IsEncrypted(prefix []byte) bool {
	return len(prefix) >= len(magic) && string(prefix[:len(magic)]) == magic
}

// PlaintextSize returns the plaintext length of an encrypted object of
// ciphertextSize bytes. It is pure arithmetic; a size no object can have
// yields an error wrapping ErrCorrupt.
func PlaintextSize(ciphertextSize int64) (int64, error) {
	if ciphertextSize < HeaderSize+TagSize {
		return 0, fmt.Errorf("sse: size %d is shorter than an empty object: %w", ciphertextSize, ErrCorrupt)
	}
	body := ciphertextSize - HeaderSize
	if body == TagSize {
		return 0, nil
	}
	full, rem := body/segmentSpan, body%segmentSpan
	var p, n int64
	switch {
	case rem == 0:
		p, n = full*SegmentSize, full
	case rem > TagSize:
		p, n = full*SegmentSize+rem-TagSize, full+1
	default:
		return 0, fmt.Errorf("sse: size %d ends inside a segment tag: %w", ciphertextSize, ErrCorrupt)
	}
	if n > maxSegments {
		return 0, fmt.Errorf("sse: size %d exceeds the format's limit: %w", ciphertextSize, ErrCorrupt)
	}
	return p, nil
}

// CiphertextSize returns the size of the encrypted form of an object of
// plaintextSize bytes: HeaderSize + plaintextSize + TagSize per segment. It is
// the inverse of PlaintextSize.
func CiphertextSize(plaintextSize int64) (int64, error) {
	if plaintextSize < 0 || plaintextSize > MaxPlaintextSize {
		return 0, fmt.Errorf("sse: plaintext size %d out of range [0, %d]", plaintextSize, int64(MaxPlaintextSize))
	}
	return HeaderSize + plaintextSize + numSegments(plaintextSize)*TagSize, nil
}

// numSegments is the number of segments of an object of p plaintext bytes.
func numSegments(p int64) int64 {
	if p == 0 {
		return 1
	}
	return (p + SegmentSize - 1) / SegmentSize
}

// segmentNonce fills nonce for segment i.
func segmentNonce(nonce *[nonceSize]byte, prefix []byte, i int64, final bool) {
	copy(nonce[:noncePrefixLen], prefix)
	binary.BigEndian.PutUint32(nonce[noncePrefixLen:], uint32(i))
	nonce[nonceSize-1] = 0
	if final {
		nonce[nonceSize-1] = 1
	}
}

// newFixedHeader returns the immutable part of a header.
func newFixedHeader(prefix []byte) [fixedSize]byte {
	var h [fixedSize]byte
	copy(h[:], magic)
	h[8] = formatVersion
	h[9] = suiteV1
	binary.BigEndian.PutUint32(h[12:16], SegmentSize)
	copy(h[16:16+noncePrefixLen], prefix)
	return h
}

func noncePrefixOf(fixed []byte) []byte { return fixed[16 : 16+noncePrefixLen] }

// checkFixedHeader validates a full header's fixed part and reserved bytes.
func checkFixedHeader(hdr []byte) error {
	if !IsEncrypted(hdr) {
		return ErrNotEncrypted
	}
	if v := hdr[8]; v != formatVersion {
		return fmt.Errorf("sse: unsupported format version %d: %w", v, ErrCorrupt)
	}
	if s := hdr[9]; s != suiteV1 {
		return fmt.Errorf("sse: unsupported cipher suite %d: %w", s, ErrCorrupt)
	}
	if ss := binary.BigEndian.Uint32(hdr[12:16]); ss != SegmentSize {
		return fmt.Errorf("sse: unsupported segment size %d: %w", ss, ErrCorrupt)
	}
	if !allZero(hdr[10:12]) || !allZero(hdr[16+noncePrefixLen:fixedSize]) || !allZero(hdr[reservedOffset:HeaderSize]) {
		return fmt.Errorf("sse: reserved header bytes are not zero: %w", ErrCorrupt)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// readHeader reads the header of an object of size bytes from ra. It returns
// ErrNotEncrypted if the magic is missing and ErrCorrupt if the header is
// short or malformed.
func readHeader(ra io.ReaderAt, size int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("sse: negative object size %d", size)
	}
	hdr := make([]byte, HeaderSize)
	want := int(min(size, HeaderSize))
	n, err := ra.ReadAt(hdr[:want], 0)
	if n < want {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("sse: header: short read: %w", ErrCorrupt)
		}
		return nil, fmt.Errorf("sse: read header: %w", err)
	}
	if !IsEncrypted(hdr[:want]) {
		return nil, ErrNotEncrypted
	}
	if want < HeaderSize {
		return nil, fmt.Errorf("sse: object of %d bytes is shorter than its header: %w", size, ErrCorrupt)
	}
	if err := checkFixedHeader(hdr); err != nil {
		return nil, err
	}
	return hdr, nil
}

// slotState classifies a key slot.
type slotState uint8

const (
	slotEmpty   slotState = iota // all zero
	slotInvalid                  // torn or damaged: ignored
	slotValid                    // CRC and structure check out
)

// keySlot is a parsed key slot.
type keySlot struct {
	state   slotState
	gen     uint64
	keyID   string
	wrapped []byte
	mac     []byte
}

// parseSlot parses one slot. It never fails: damage yields slotInvalid.
func parseSlot(b []byte) keySlot {
	if allZero(b) {
		return keySlot{state: slotEmpty}
	}
	bad := keySlot{state: slotInvalid}
	if crc32.Checksum(b[:slotCRCOffset], castagnoli) != binary.BigEndian.Uint32(b[slotCRCOffset:]) {
		return bad
	}
	gen := binary.BigEndian.Uint64(b[0:8])
	k := int(b[8])
	w := int(binary.BigEndian.Uint16(b[9:11]))
	if gen == 0 || k == 0 || w == 0 || k+w > slotPayloadMax {
		return bad
	}
	keyID := b[slotHeadLen : slotHeadLen+k]
	if !validSlotKeyID(keyID) {
		return bad
	}
	end := slotHeadLen + k + w + macSize
	if !allZero(b[end:slotCRCOffset]) {
		return bad
	}
	return keySlot{
		state:   slotValid,
		gen:     gen,
		keyID:   string(keyID),
		wrapped: b[slotHeadLen+k : slotHeadLen+k+w],
		mac:     b[slotHeadLen+k+w : end],
	}
}

// validSlotKeyID accepts 1..255 bytes of printable ASCII without spaces.
func validSlotKeyID[T string | []byte](id T) bool {
	if len(id) == 0 || len(id) > maxSlotKeyID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// checkWrapResult validates what a KeyWrapper returned from Wrap.
func checkWrapResult(keyID string, wrapped []byte) error {
	if !validSlotKeyID(keyID) {
		return fmt.Errorf("sse: key id %q from the key wrapper is not 1..%d printable ASCII bytes", truncate(keyID, 80), maxSlotKeyID)
	}
	if len(wrapped) == 0 || len(keyID)+len(wrapped) > slotPayloadMax {
		return fmt.Errorf("sse: wrapped key of %d bytes with key id of %d bytes does not fit a key slot (%d bytes)",
			len(wrapped), len(keyID), slotPayloadMax)
	}
	return nil
}

// encodeSlot writes a slot into dst (slotSize bytes). keyID and wrapped must
// have passed checkWrapResult.
func encodeSlot(dst []byte, gen uint64, keyID string, wrapped, mac []byte) {
	clear(dst[:slotSize])
	binary.BigEndian.PutUint64(dst[0:8], gen)
	dst[8] = byte(len(keyID))
	binary.BigEndian.PutUint16(dst[9:11], uint16(len(wrapped)))
	n := slotHeadLen
	n += copy(dst[n:], keyID)
	n += copy(dst[n:], wrapped)
	copy(dst[n:], mac)
	binary.BigEndian.PutUint32(dst[slotCRCOffset:], crc32.Checksum(dst[:slotCRCOffset], castagnoli))
}

// slotMAC authenticates a slot's contents and binds them to the fixed header.
func slotMAC(macKey, fixed []byte, gen uint64, keyID string, wrapped []byte) []byte {
	m := hmac.New(sha256.New, macKey)
	m.Write([]byte(slotMACLabel))
	m.Write(fixed)
	var b [11]byte
	binary.BigEndian.PutUint64(b[0:8], gen)
	b[8] = byte(len(keyID))
	m.Write(b[:9])
	m.Write([]byte(keyID))
	binary.BigEndian.PutUint16(b[9:11], uint16(len(wrapped)))
	m.Write(b[9:11])
	m.Write(wrapped)
	return m.Sum(nil)
}

// deriveKey derives a 32-byte subkey of dek for label, bound to the fixed header.
func deriveKey(dek, fixed []byte, label string) ([]byte, error) {
	k, err := hkdf.Key(sha256.New, dek, nil, label+string(fixed), KeySize)
	if err != nil {
		return nil, fmt.Errorf("sse: derive key: %w", err)
	}
	return k, nil
}

// dataAEAD returns the segment cipher of an object.
func dataAEAD(dek, fixed []byte) (cipher.AEAD, error) {
	k, err := deriveKey(dek, fixed, dataKeyLabel)
	if err != nil {
		return nil, err
	}
	defer clear(k)
	return newGCM(k)
}

// sealSlot computes the MAC for a slot and encodes it into dst.
func sealSlot(dst []byte, dek, fixed []byte, gen uint64, keyID string, wrapped []byte) error {
	macKey, err := deriveKey(dek, fixed, macKeyLabel)
	if err != nil {
		return err
	}
	defer clear(macKey)
	encodeSlot(dst, gen, keyID, wrapped, slotMAC(macKey, fixed, gen, keyID, wrapped))
	return nil
}

// unlocked is a header whose DEK has been recovered.
type unlocked struct {
	slots  [2]keySlot
	active int    // index of the slot whose DEK was used
	dek    []byte // caller must clear
}

// unlock recovers the DEK from a header that passed checkFixedHeader. It tries
// the valid slots, highest generation first, and uses the first whose DEK
// unwraps and whose MAC verifies. Errors other than ErrUnknownKey and
// ErrCorrupt from the KeyWrapper are returned at once.
func unlock(ctx context.Context, hdr []byte, kw KeyWrapper) (*unlocked, error) {
	if kw == nil {
		return nil, errors.New("sse: nil KeyWrapper")
	}
	fixed := hdr[:fixedSize]
	u := &unlocked{}
	for i, off := range slotOffsets {
		u.slots[i] = parseSlot(hdr[off : off+slotSize])
	}
	order := []int{0, 1}
	if u.slots[1].gen > u.slots[0].gen {
		order = []int{1, 0}
	}
	var firstErr error
	for _, i := range order {
		s := u.slots[i]
		if s.state != slotValid {
			continue
		}
		dek, err := kw.Unwrap(ctx, s.keyID, s.wrapped)
		if err != nil && !errors.Is(err, ErrUnknownKey) && !errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("sse: unwrap data key: %w", err)
		}
		if err == nil {
			err = verifySlot(dek, fixed, s)
		}
		if err != nil {
			clear(dek)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		u.active, u.dek = i, dek
		return u, nil
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("sse: no valid key slot: %w", ErrCorrupt)
	}
	return nil, firstErr
}

// verifySlot checks an unwrapped DEK against the slot's MAC.
func verifySlot(dek, fixed []byte, s keySlot) error {
	if len(dek) != KeySize {
		return fmt.Errorf("sse: unwrapped data key has %d bytes: %w", len(dek), ErrCorrupt)
	}
	macKey, err := deriveKey(dek, fixed, macKeyLabel)
	if err != nil {
		return err
	}
	defer clear(macKey)
	if !hmac.Equal(slotMAC(macKey, fixed, s.gen, s.keyID, s.wrapped), s.mac) {
		return fmt.Errorf("sse: key slot fails authentication: %w", ErrCorrupt)
	}
	return nil
}

// nextGeneration returns one more than the highest generation of any slot
// whose CRC checks out.
func nextGeneration(slots [2]keySlot) (uint64, error) {
	var g uint64
	for _, s := range slots {
		if s.state == slotValid {
			g = max(g, s.gen)
		}
	}
	if g == math.MaxUint64 {
		return 0, fmt.Errorf("sse: key slot generation overflow: %w", ErrCorrupt)
	}
	return g + 1, nil
}
