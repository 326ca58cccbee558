package sse

import (
	"context"
	"fmt"
	"os"
)

// Rewrap re-wraps the DEK of the encrypted object in f under kw's current key,
// in place and without touching data segments. f must be open for reading and
// writing (not O_APPEND).
//
// It is crash-safe: Rewrap writes the new wrapping into the key slot Open did
// not use, with the next generation, and fsyncs; only then does it zero the old
// slot and fsync again. A crash at any point leaves a slot that opens the
// object (see the package doc). Afterwards only the new key opens the object.
//
// Rewrap returns false if the DEK is already wrapped with the current key. The
// wrapping is then left as it is, but Rewrap still finishes an interrupted
// rotation by zeroing a stale older slot if one is present. The caller must not
// run two Rewraps on one file at once; concurrent readers are safe. Errors are
// those of Open plus I/O errors.
func Rewrap(ctx context.Context, f *os.File, kw KeyWrapper) (changed bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("sse: rewrap: %w", err)
	}
	hdr, err := readHeader(f, fi.Size())
	if err != nil {
		return false, err
	}
	if _, err := PlaintextSize(fi.Size()); err != nil {
		return false, err
	}
	u, err := unlock(ctx, hdr, kw)
	if err != nil {
		return false, err
	}
	defer clear(u.dek)
	active, other := u.active, 1-u.active
	act, old := u.slots[active], u.slots[other]
	if act.keyID == kw.CurrentKeyID() {
		if old.state != slotEmpty && old.gen < act.gen {
			return false, zeroSlot(f, other)
		}
		return false, nil
	}
	gen, err := nextGeneration(u.slots)
	if err != nil {
		return false, err
	}
	keyID, wrapped, err := kw.Wrap(ctx, u.dek)
	if err != nil {
		return false, fmt.Errorf("sse: rewrap: wrap data key: %w", err)
	}
	if err := checkWrapResult(keyID, wrapped); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("sse: rewrap: %w", err)
	}
	slot := make([]byte, slotSize)
	if err := sealSlot(slot, u.dek, hdr[:fixedSize], gen, keyID, wrapped); err != nil {
		return false, err
	}
	if err := writeSlot(f, other, slot); err != nil {
		return false, err
	}
	// The new slot is durable; retire the old one so the old key no longer
	// opens the object.
	if err := zeroSlot(f, active); err != nil {
		return true, err
	}
	return true, nil
}

// writeSlot writes slot bytes into slot i and fsyncs.
func writeSlot(f *os.File, i int, slot []byte) error {
	if _, err := f.WriteAt(slot, int64(slotOffsets[i])); err != nil {
		return fmt.Errorf("sse: rewrap: write key slot: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sse: rewrap: sync: %w", err)
	}
	return nil
}

// zeroSlot empties slot i and fsyncs.
func zeroSlot(f *os.File, i int) error {
	return writeSlot(f, i, make([]byte, slotSize))
}
