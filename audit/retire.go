package audit

import (
	"context"
	"fmt"
)

// RetiredSealPrefix is the reserved prefix, inside the warehouse, where a
// restore moves the seals of records it rewound: one folder per restore.
const RetiredSealPrefix = "_floe/audit/checkpoints-retired/"

// SealRetirer is SealObjects that can also move a seal out of the chain of
// seals, into RetiredSealPrefix.
type SealRetirer interface {
	SealObjects
	// RetireSeal moves the seal name to RetiredSealPrefix + dir + "/" +
	// name: afterwards ListSeals no longer returns it. Retiring a seal
	// already moved is not an error.
	RetireSeal(ctx context.Context, name, dir string) error
}

// RetireResult says what RetireSealsAfter moved.
type RetireResult struct {
	// Count is how many seals were moved; First and Last the seqs of the
	// first and last records they sealed (0 when none).
	Count       int
	First, Last int64
}

// RetireSealsAfter moves every seal of a record after seq into
// RetiredSealPrefix + dir: the seals of records that a restore to head seq
// rewound. Those records are gone from the store, so the seals would make
// VerifySeals report records deleted, and their names would collide with
// the seals of the new records that take the same seqs. They are moved,
// not deleted, so that what the restore discarded stays in the warehouse;
// the restore records the move in the audit log (the store.restore event).
func RetireSealsAfter(ctx context.Context, objs SealRetirer, seq int64, dir string) (RetireResult, error) {
	var res RetireResult
	after := sealName(seq)
	for {
		names, err := objs.ListSeals(ctx, after, listSealPage)
		if err != nil {
			return res, fmt.Errorf("audit: list the warehouse checkpoints after record %d: %w", seq, err)
		}
		for _, n := range names {
			s, ok := sealSeq(n)
			if !ok || s <= seq {
				continue
			}
			if err := objs.RetireSeal(ctx, n, dir); err != nil {
				return res, fmt.Errorf("audit: retire the warehouse checkpoint %s: %w", n, err)
			}
			if res.Count == 0 {
				res.First = s
			}
			res.Count++
			res.Last = s
		}
		if len(names) < listSealPage {
			return res, nil
		}
		after = names[len(names)-1]
	}
}
