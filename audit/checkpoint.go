package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// CheckpointVersion is the format version of the checkpoints this build
// writes. Verify refuses versions it does not know, so that a later format
// (e.g. one keyed with a wrapped HMAC) is never misread.
const CheckpointVersion = 1

// checkpointDomain prefixes every signed checkpoint body. It separates
// checkpoint signatures from every other use of the signing key: a JWT's
// signing input is base64url text and a dot, which never contains '/' or a
// newline, so no checkpoint signature is a valid token signature or the
// reverse.
const checkpointDomain = "floe-audit-checkpoint/v1\n"

// Checkpoint marks a cut of the chain made by pruning: every record up to
// and including Seq was deleted, and the record after it must link to Hash.
type Checkpoint struct {
	// Version is the format version (CheckpointVersion).
	Version int `json:"v"`
	// Seq is the seq of the last pruned record.
	Seq int64 `json:"seq"`
	// Hash is the hash of the last pruned record.
	Hash string `json:"hash"`
	// Pruned is how many records were pruned in all, up to and including Seq.
	Pruned int64 `json:"pruned"`
	// Time is when the cut was made (UTC).
	Time time.Time `json:"time"`
}

// SignedCheckpoint is a checkpoint as stored: the exact bytes that were
// signed, the signing key's id and the signature.
type SignedCheckpoint struct {
	// Seq duplicates the body's Seq for the store's compare-and-swap; Verify
	// trusts only the body.
	Seq       int64
	Body      []byte
	KeyID     string
	Signature []byte
}

// Signer signs and verifies checkpoints with a server key (the auth
// service's token-signing key).
type Signer interface {
	// SignAuditCheckpoint signs msg, returning the key id and signature.
	SignAuditCheckpoint(ctx context.Context, msg []byte) (kid string, sig []byte, err error)
	// VerifyAuditCheckpoint returns nil if sig is kid's signature of msg.
	VerifyAuditCheckpoint(ctx context.Context, kid string, msg, sig []byte) error
}

// Checkpoints is what pruning needs from a store beyond Store.
type Checkpoints interface {
	// AuditCheckpoint returns the newest checkpoint; ok is false when the
	// log was never pruned.
	AuditCheckpoint(ctx context.Context) (cp SignedCheckpoint, ok bool, err error)
	// PruneAudit, in one transaction, checks that the newest checkpoint is
	// at prevSeq (0: none) and that record cp.Seq has hash lastHash (when
	// cp.Seq > prevSeq), deletes the records with prevSeq < seq <= cp.Seq
	// and stores cp as the newest checkpoint. It answers floe.Conflict if
	// another node pruned first. With cp.Seq == prevSeq it only replaces
	// the checkpoint (a re-signing). It returns how many records it deleted.
	PruneAudit(ctx context.Context, prevSeq int64, lastHash string, cp SignedCheckpoint) (int64, error)
}

// encodeCheckpoint returns the signed body of c.
func encodeCheckpoint(c Checkpoint) ([]byte, error) {
	c.Time = c.Time.UTC().Truncate(time.Microsecond)
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("audit: encode checkpoint: %w", err)
	}
	return b, nil
}

// signingInput is what a checkpoint's signature covers.
func signingInput(body []byte) []byte {
	return append([]byte(checkpointDomain), body...)
}

// sign encodes and signs c.
func sign(ctx context.Context, s Signer, c Checkpoint) (SignedCheckpoint, error) {
	body, err := encodeCheckpoint(c)
	if err != nil {
		return SignedCheckpoint{}, err
	}
	kid, sig, err := s.SignAuditCheckpoint(ctx, signingInput(body))
	if err != nil {
		return SignedCheckpoint{}, fmt.Errorf("audit: sign checkpoint: %w", err)
	}
	return SignedCheckpoint{Seq: c.Seq, Body: body, KeyID: kid, Signature: sig}, nil
}

// open verifies sc's signature and decodes its body, wrapping ErrTampered
// when either fails.
func open(ctx context.Context, s Signer, sc SignedCheckpoint) (Checkpoint, error) {
	if s == nil {
		return Checkpoint{}, errors.New("audit: the log was pruned, and checking its checkpoint needs the server's signing key")
	}
	if err := s.VerifyAuditCheckpoint(ctx, sc.KeyID, signingInput(sc.Body), sc.Signature); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: the checkpoint's signature does not verify (key %q): %w", ErrTampered, sc.KeyID, err)
	}
	var c Checkpoint
	dec := json.NewDecoder(bytes.NewReader(sc.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: the checkpoint is not readable: %w", ErrTampered, err)
	}
	if c.Version != CheckpointVersion {
		return Checkpoint{}, fmt.Errorf("audit: checkpoint version %d is not known to this build (it knows %d)", c.Version, CheckpointVersion)
	}
	if c.Seq <= 0 || c.Pruned < 0 || c.Pruned > c.Seq {
		return Checkpoint{}, fmt.Errorf("%w: the checkpoint is inconsistent (seq %d, pruned %d)", ErrTampered, c.Seq, c.Pruned)
	}
	return c, nil
}
