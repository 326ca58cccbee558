package sse

// Layout constants for black-box tests that damage or splice headers.
const (
	FixedSize      = fixedSize
	SlotSize       = slotSize
	SlotAOffset    = slotAOffset
	SlotBOffset    = slotBOffset
	ReservedOffset = reservedOffset
)

// SlotGenerations returns the generation of each key slot of hdr (0 for an
// empty or damaged slot).
func SlotGenerations(hdr []byte) [2]uint64 {
	var g [2]uint64
	for i, off := range slotOffsets {
		s := parseSlot(hdr[off : off+slotSize])
		if s.state == slotValid {
			g[i] = s.gen
		}
	}
	return g
}
