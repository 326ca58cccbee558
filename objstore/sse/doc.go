// Package sse encrypts objects at rest for Floe's embedded object store.
//
// Each object gets a fresh random 256-bit data key (DEK). The DEK encrypts the
// object with AES-256-GCM in independently authenticated segments of
// [SegmentSize] plaintext bytes, so a range read decrypts (and verifies) only
// the segments it touches. The DEK itself is stored in the object's header,
// wrapped by a warehouse key through a [KeyWrapper]; [LocalKeyring] is the
// implementation backed by a key file or an environment variable. Key rotation
// ([Rewrap]) re-wraps the DEK under the current warehouse key in place, without
// rewriting any data. Plaintext never reaches the underlying writer: [NewWriter]
// encrypts in memory, one segment at a time.
//
// # Key file
//
// [ParseKeyring] reads a UTF-8 text file with one warehouse key per line:
//
//	# comment lines and blank lines are ignored
//	2026-01 q0b1Z3...base64 of exactly 32 bytes...=
//	2026-07 Vt9k1c...base64 of exactly 32 bytes...=
//
// Each line is "<id> <base64 key>" separated by spaces or tabs. Ids match
// [A-Za-z0-9._-]{1,64} and must be unique. The key is standard base64 (padding
// optional) of exactly 32 bytes. The LAST key listed is current: new objects,
// and objects passed to [Rewrap], are wrapped with it; the earlier keys only
// unwrap. A file holding nothing but one bare base64 key is also accepted; its
// id is "default". To rotate, append a new line, restart, and run [Rewrap] over
// the objects; once every object reports the new id the old line can be deleted.
// [LoadKeyring] refuses a key file that group or others may access (mode &
// 0o077 != 0). [GenerateKey] makes a key.
//
// # Object format (version 1)
//
// All integers are big-endian. An object is a fixed [HeaderSize] (1024-byte)
// header followed by the data segments; data offsets never move.
//
//	offset  size  field
//	     0     8  magic "FLOESSE1"
//	     8     1  format version = 1
//	     9     1  suite = 1 (AES-256-GCM, HKDF-SHA256, HMAC-SHA256)
//	    10     2  reserved, zero
//	    12     4  segment size = 65536
//	    16     7  nonce prefix (random per object)
//	    23     9  reserved, zero
//	    32   480  key slot A
//	   512   480  key slot B
//	   992    32  reserved, zero
//
// Bytes 0..31 are the immutable part ("fixed header"); they never change after
// the object is written and are the associated data of every segment. Each key
// slot sits inside its own 512-byte sector, so writing one slot cannot tear the
// other. A slot is either all zero (empty) or:
//
//	offset  size  field
//	     0     8  generation (>= 1)
//	     8     1  key id length k (1..255, printable ASCII without spaces)
//	     9     2  wrapped DEK length w (k + w <= 433)
//	    11     k  key id of the warehouse key
//	  11+k     w  wrapped DEK, as returned by KeyWrapper.Wrap
//	11+k+w    32  slot MAC
//	     …     …  zero padding
//	   476     4  CRC-32C of slot bytes 0..475
//
// The CRC detects a torn slot write without any key. The slot MAC is
// HMAC-SHA256(macKey, "floe-sse v1 slot\x00" || fixed header || generation ||
// k || key id || w || wrapped DEK); it binds the wrapped DEK, its key id and its
// generation to this object (its nonce prefix), so a slot cannot be transplanted
// between objects or relabelled, whatever the KeyWrapper. It also commits to the
// DEK: a wrong DEK never passes.
//
// From the DEK two keys are derived with HKDF-SHA256 (no salt, info = label ||
// fixed header): the data key (label "floe-sse v1 data\x00") and macKey (label
// "floe-sse v1 slot mac\x00"). The DEK and derived keys are zeroed after use;
// only the expanded AES key schedule stays in memory while a Reader or writer
// lives.
//
// Segment i (0-based) starts at HeaderSize + i*(SegmentSize+16) and is
// AES-256-GCM(data key, nonce, plaintext, fixed header) with
//
//	nonce = nonce prefix (7 bytes) || uint32(i) || final flag (1 byte: 1 on the last segment, else 0)
//
// Every segment but the last holds exactly SegmentSize plaintext bytes; the last
// holds 1..SegmentSize bytes, or 0 bytes if the whole object is empty (so an
// empty object is the header plus one 16-byte tag). The plaintext size is thus a
// pure function of the ciphertext size ([PlaintextSize], [CiphertextSize]). At
// most 2^32 segments (256 TiB) fit in one object.
//
// # Integrity
//
// Reordering, swapping, truncating, extending or flipping bits in any segment
// makes reading the affected range fail with [ErrCorrupt]: a moved segment fails
// because its index is in the nonce, a segment from another object because its
// key and nonce prefix differ, and a truncation or append because the segment
// that the size marks as last was not sealed as final (or the size is
// impossible). Segments wholly before the damage still read correctly. A damaged
// fixed header or active slot makes [Open] fail with ErrCorrupt. A damaged
// inactive (non-chosen) slot is indistinguishable from a torn [Rewrap] and is
// ignored; it cannot change the data read, since any slot used must pass its MAC.
//
// # Rotation
//
// [Rewrap] unwraps the DEK, wraps it with the current warehouse key into the
// slot that is not in use with generation+1, fsyncs, then zeroes the previous
// slot and fsyncs again. [Open] tries the structurally valid slots, highest
// generation first, and uses the first whose DEK unwraps and whose MAC verifies.
// A crash during the first write leaves the old slot in charge; a crash between
// the two writes leaves both valid (the new one wins); a crash during the
// second leaves the new one. Zeroing the old slot means that once an object is
// rewrapped, the retired key no longer opens it.
//
// # AWS KMS
//
// A KMS-backed KeyWrapper needs no format change: Wrap calls kms:Encrypt with
// the 32-byte DEK under the configured key ARN (returning the ARN, which must be
// at most 255 bytes, as keyID and CiphertextBlob as wrapped; a symmetric KMS
// blob for 32 bytes is about 184 bytes, well within a slot), Unwrap calls
// kms:Decrypt with KeyId set to keyID and maps NotFoundException and
// IncorrectKeyException to [ErrUnknownKey] and InvalidCiphertextException to
// [ErrCorrupt], and CurrentKeyID returns the configured ARN. An encryption
// context such as {"floe": "sse-v1"} may be passed on both calls; binding to the
// object is already done by the slot MAC. Open calls Unwrap once per object, so
// a KMS wrapper used for many small reads may want a short-lived cache of
// unwrapped DEKs keyed by the wrapped bytes.
package sse
