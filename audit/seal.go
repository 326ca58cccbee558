package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/floe-lake/floe"
)

// SealVersion is the format version of the seals this build writes.
const SealVersion = 1

// sealDomain prefixes every signed seal body. It differs from
// checkpointDomain, so that a pruning checkpoint's signature is never a
// seal's, and, like it, can never be a JWT signing input.
const sealDomain = "floe-audit-seal/v1\n"

// SealPrefix is the reserved prefix, inside the warehouse, of the seal
// objects. Their names are the zero-padded seq of the record they seal, so
// that listing them returns them in seq order.
const SealPrefix = "_floe/audit/checkpoints/"

// maxSealBytes bounds a seal object read back from the warehouse.
const maxSealBytes = 64 << 10

// Seal is a checkpoint of the head of the chain written to the warehouse as
// an immutable object: the store cannot be rewritten consistently (records,
// hashes and head) without disagreeing with it.
type Seal struct {
	// Version is the format version (SealVersion).
	Version int `json:"v"`
	// Seq and Hash are the seq and hash of the sealed record (the head).
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
	// Time is when the seal was made (UTC).
	Time time.Time `json:"time"`
	// PrevSeq is the seq of the seal this one follows (0: none), Prev the
	// hex SHA-256 of that seal's object bytes: a chain of seals, so that a
	// seal signed with a key since retired is still vouched for by the
	// newer seals, and a deleted seal is noticed.
	PrevSeq int64  `json:"prev_seq"`
	Prev    string `json:"prev"`
	// Node names the node that wrote it.
	Node string `json:"node"`
}

// sealObject is a seal as stored: its exact signed body, the signing
// key's id and the signature.
type sealObject struct {
	Body  json.RawMessage `json:"seal"`
	KeyID string          `json:"kid"`
	Sig   []byte          `json:"sig"`
}

// SealObjects is the warehouse storage of seals. Names are relative to
// SealPrefix.
type SealObjects interface {
	// CreateSeal stores data under name only if no object has that name
	// (If-None-Match: *); it answers floe.Conflict when one does.
	CreateSeal(ctx context.Context, name string, data []byte) error
	// ListSeals returns up to limit names greater than after, in order.
	ListSeals(ctx context.Context, after string, limit int) ([]string, error)
	// ReadSeal returns the object name (at most max bytes); floe.NotFound
	// if it does not exist.
	ReadSeal(ctx context.Context, name string, max int64) ([]byte, error)
}

// sealName is the object name of the seal of record seq.
func sealName(seq int64) string { return fmt.Sprintf("%020d.json", seq) }

// sealSeq parses a seal object name; ok is false for anything else.
func sealSeq(name string) (int64, bool) {
	s, ok := strings.CutSuffix(name, ".json")
	if !ok || len(s) != 20 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

// listSealPage is how many names one ListSeals call asks for.
const listSealPage = 1000

// Sealer writes seals of the chain's head into the warehouse. One Sealer
// serves one node; any number of nodes may seal the same log: a seal of a
// seq that another node sealed first is not written again (If-None-Match),
// and the loser moves on.
type Sealer struct {
	log  *Log
	objs SealObjects
	node string

	mu sync.Mutex
	// last is the newest seal this sealer knows of (zero: none yet read).
	lastName string
	lastSeq  int64
	lastSum  string
	listed   bool
}

// NewSealer returns a Sealer of l's chain into objs; node names the node in
// the seals it writes. The Log needs a Signer.
func (l *Log) NewSealer(objs SealObjects, node string) *Sealer {
	return &Sealer{log: l, objs: objs, node: node}
}

// SealResult says what one Seal call did.
type SealResult struct {
	// Written is true when this call stored a new seal.
	Written bool
	// Seal is the newest seal afterwards (zero when none).
	Seal Seal
}

// Seal writes a seal of the current head, unless the newest seal in the
// warehouse already covers it. Seals are background work: nothing waits
// on them.
func (s *Sealer) Seal(ctx context.Context) (SealResult, error) {
	if s.log.signer == nil {
		return SealResult{}, floe.E(floe.Internal, "audit", "sealing the audit log needs a signing key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seq, hash, err := s.log.store.AuditHead(ctx)
	if err != nil {
		return SealResult{}, fmt.Errorf("audit: seal: %w", err)
	}
	if err := s.catchUp(ctx); err != nil {
		return SealResult{}, err
	}
	if seq == 0 || seq <= s.lastSeq {
		return SealResult{Seal: Seal{Seq: s.lastSeq}}, nil
	}
	c := Seal{Version: SealVersion, Seq: seq, Hash: hash, Time: s.log.now().UTC().Truncate(time.Microsecond),
		PrevSeq: s.lastSeq, Prev: s.lastSum, Node: s.node}
	body, err := json.Marshal(c)
	if err != nil {
		return SealResult{}, fmt.Errorf("audit: encode seal: %w", err)
	}
	kid, sig, err := s.log.signer.SignAuditCheckpoint(ctx, append([]byte(sealDomain), body...))
	if err != nil {
		return SealResult{}, fmt.Errorf("audit: sign seal: %w", err)
	}
	data, err := json.Marshal(sealObject{Body: body, KeyID: kid, Sig: sig})
	if err != nil {
		return SealResult{}, fmt.Errorf("audit: encode seal: %w", err)
	}
	name := sealName(seq)
	switch err := s.objs.CreateSeal(ctx, name, data); {
	case floe.KindOf(err) == floe.Conflict:
		// Another node sealed this seq first: take its seal as the newest.
		s.listed = false
		if err := s.catchUp(ctx); err != nil {
			return SealResult{}, err
		}
		return SealResult{Seal: Seal{Seq: s.lastSeq}}, nil
	case err != nil:
		return SealResult{}, fmt.Errorf("audit: write seal of record %d: %w", seq, err)
	}
	s.lastName, s.lastSeq, s.lastSum = name, seq, sum(data)
	return SealResult{Written: true, Seal: c}, nil
}

// catchUp finds the newest seal in the warehouse: on the first call by
// listing them all, later only those after the newest known (written by
// other nodes meanwhile).
func (s *Sealer) catchUp(ctx context.Context) error {
	after := s.lastName
	if !s.listed {
		after = ""
	}
	newest := ""
	for {
		names, err := s.objs.ListSeals(ctx, after, listSealPage)
		if err != nil {
			return fmt.Errorf("audit: list seals: %w", err)
		}
		for _, n := range names {
			if _, ok := sealSeq(n); ok {
				newest = n
			}
		}
		if len(names) < listSealPage {
			break
		}
		after = names[len(names)-1]
	}
	s.listed = true
	if newest == "" || newest == s.lastName {
		return nil
	}
	data, err := s.objs.ReadSeal(ctx, newest, maxSealBytes)
	if err != nil {
		return fmt.Errorf("audit: read seal %s: %w", newest, err)
	}
	seq, _ := sealSeq(newest)
	s.lastName, s.lastSeq, s.lastSum = newest, seq, sum(data)
	return nil
}

// sum is the hex SHA-256 of a seal object's bytes.
func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// readSeal is one seal read back from the warehouse.
type readSeal struct {
	name   string
	seal   Seal
	sum    string
	signed bool // its signature verifies with a known key
	err    error
}

// decodeSeal parses a seal object and checks its signature; a seal that
// does not parse is returned with err set.
func decodeSeal(ctx context.Context, signer Signer, name string, data []byte) readSeal {
	rs := readSeal{name: name, sum: sum(data)}
	var o sealObject
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		rs.err = fmt.Errorf("not a seal: %w", err)
		return rs
	}
	bd := json.NewDecoder(bytes.NewReader(o.Body))
	bd.DisallowUnknownFields()
	if err := bd.Decode(&rs.seal); err != nil {
		rs.err = fmt.Errorf("not a seal: %w", err)
		return rs
	}
	seq, _ := sealSeq(name)
	switch {
	case rs.seal.Version != SealVersion:
		rs.err = fmt.Errorf("seal version %d is not known to this build (it knows %d)", rs.seal.Version, SealVersion)
	case rs.seal.Seq != seq || rs.seal.PrevSeq < 0 || rs.seal.PrevSeq >= seq:
		rs.err = fmt.Errorf("the seal's seq %d (after %d) does not match its name", rs.seal.Seq, rs.seal.PrevSeq)
	}
	if rs.err == nil && signer != nil {
		rs.signed = signer.VerifyAuditCheckpoint(ctx, o.KeyID, append([]byte(sealDomain), o.Body...), o.Sig) == nil
	}
	return rs
}

// SealReport says what verifying the chain against the warehouse seals
// found. It is filled in also when the verification fails.
type SealReport struct {
	// Seals is how many seal objects the warehouse holds; Trusted how many
	// of them are proven (signed with a known key, or vouched for by a
	// newer trusted seal's link).
	Seals, Trusted int
	// Ignored lists seals that prove nothing: unreadable, or not signed
	// with a key this server knows and not vouched for by a newer seal
	// (forged, or signed with a key since retired).
	Ignored []string
	// Proven is the seq of the newest record whose hash a trusted seal
	// confirms (0: none); ProvenAt is that seal's time.
	Proven   int64
	ProvenAt time.Time
	// Unsealed is the first record after the last proven one still in the
	// store (0: none), UnsealedAt its time: records from there on are
	// only as good as the store.
	Unsealed   int64
	UnsealedAt time.Time
	// Before is how many trusted seals lie at or before the pruning
	// checkpoint (their records were pruned; they are not compared).
	Before int
}

// VerifySeals checks the chain in the store (as VerifyChain does) and
// every seal in objs against it. It fails, wrapping ErrTampered, when a
// trusted seal disagrees with the hash of the record it seals, when a
// trusted seal seals a record the store no longer holds, or when a trusted
// seal links to a seal that is missing from the warehouse. The error says
// up to which record the history is proven and from which record on it is
// not.
func (l *Log) VerifySeals(ctx context.Context, objs SealObjects) (VerifyResult, SealReport, error) {
	var rep SealReport
	seals, err := l.readSeals(ctx, objs)
	if err != nil {
		return VerifyResult{}, rep, err
	}
	rep.Seals = len(seals)
	trusted := trust(seals)
	byName := map[string]*readSeal{}
	for i := range seals {
		byName[seals[i].name] = &seals[i]
	}
	var ts []*readSeal
	for i := range seals {
		if trusted[i] {
			ts = append(ts, &seals[i])
			continue
		}
		why := "not signed with a key this server knows"
		if seals[i].err != nil {
			why = seals[i].err.Error()
		}
		rep.Ignored = append(rep.Ignored, seals[i].name+": "+why)
	}
	rep.Trusted = len(ts)
	// A trusted seal's link to a seal the warehouse no longer holds.
	var missing error
	for _, t := range ts {
		if t.seal.PrevSeq == 0 {
			continue
		}
		p, ok := byName[sealName(t.seal.PrevSeq)]
		if !ok || p.sum != t.seal.Prev {
			missing = fmt.Errorf("%w: the warehouse checkpoint of record %d is missing or was replaced (the checkpoint of record %d links to it)",
				ErrTampered, t.seal.PrevSeq, t.seal.Seq)
			break
		}
	}
	res, walkErr := l.walkSeals(ctx, ts, &rep)
	if walkErr != nil {
		return res, rep, walkErr
	}
	if missing != nil {
		return res, rep, fmt.Errorf("%w; %s", missing, rep.provenText())
	}
	return res, rep, nil
}

// provenText says how far the history is proven.
func (r SealReport) provenText() string {
	s := "the history is proven up to record 0 (no checkpoint agrees)"
	if r.Proven > 0 {
		s = fmt.Sprintf("the history is proven up to record %d (checkpoint at %s)", r.Proven, r.ProvenAt.UTC().Format(time.RFC3339))
	}
	if r.Unsealed > 0 {
		s += fmt.Sprintf(" and not proven from record %d (%s) on", r.Unsealed, r.UnsealedAt.UTC().Format(time.RFC3339))
	}
	return s
}

// readSeals reads every seal object, in seq order.
func (l *Log) readSeals(ctx context.Context, objs SealObjects) ([]readSeal, error) {
	var out []readSeal
	after := ""
	for {
		names, err := objs.ListSeals(ctx, after, listSealPage)
		if err != nil {
			return nil, fmt.Errorf("audit: list the warehouse checkpoints: %w", err)
		}
		for _, n := range names {
			if _, ok := sealSeq(n); !ok {
				out = append(out, readSeal{name: n, err: errors.New("not a checkpoint name")})
				continue
			}
			data, err := objs.ReadSeal(ctx, n, maxSealBytes)
			if err != nil {
				if floe.KindOf(err) == floe.NotFound {
					continue
				}
				if floe.KindOf(err) == floe.Invalid { // too large to be a seal
					out = append(out, readSeal{name: n, err: err})
					continue
				}
				return nil, fmt.Errorf("audit: read the warehouse checkpoint %s: %w", n, err)
			}
			out = append(out, decodeSeal(ctx, l.signer, n, data))
		}
		if len(names) < listSealPage {
			return out, nil
		}
		after = names[len(names)-1]
	}
}

// trust marks the seals that are proven: from the newest down, a seal is
// trusted if its signature verifies, or if a trusted newer seal links to
// it by the hash of its bytes.
func trust(seals []readSeal) []bool {
	t := make([]bool, len(seals))
	vouched := map[string]bool{} // "<seq>/<sum>" linked by a trusted seal
	for i := len(seals) - 1; i >= 0; i-- {
		s := &seals[i]
		if s.err != nil {
			continue
		}
		if s.signed || vouched[strconv.FormatInt(s.seal.Seq, 10)+"/"+s.sum] {
			t[i] = true
			if s.seal.PrevSeq > 0 {
				vouched[strconv.FormatInt(s.seal.PrevSeq, 10)+"/"+s.seal.Prev] = true
			}
		}
	}
	return t
}

// walkSeals walks the store's chain as VerifyChain does, comparing the
// records that trusted seals seal with them.
func (l *Log) walkSeals(ctx context.Context, ts []*readSeal, rep *SealReport) (VerifyResult, error) {
	var firstErr error
	next := 0 // the next trusted seal to compare
	var start int64
	check := func(r Record) bool {
		for next < len(ts) && ts[next].seal.Seq < r.Seq {
			if ts[next].seal.Seq <= start {
				rep.Before++
			}
			next++
		}
		if rep.Unsealed == 0 {
			rep.Unsealed, rep.UnsealedAt = r.Seq, r.Time
		}
		if next >= len(ts) || ts[next].seal.Seq != r.Seq {
			return true
		}
		s := ts[next].seal
		if s.Hash != r.Hash {
			firstErr = fmt.Errorf("%w: record %d's hash disagrees with the warehouse checkpoint of %s: %s",
				ErrTampered, r.Seq, s.Time.UTC().Format(time.RFC3339), rep.provenText())
			return false
		}
		rep.Proven, rep.ProvenAt = r.Seq, s.Time
		rep.Unsealed, rep.UnsealedAt = 0, time.Time{}
		next++
		return true
	}
	res, err := l.verifyWith(ctx, func(from int64) {
		// (Again, when a concurrent prune made the walk start over.)
		start, next, firstErr = from, 0, nil
		rep.Proven, rep.ProvenAt, rep.Unsealed, rep.UnsealedAt, rep.Before = 0, time.Time{}, 0, time.Time{}, 0
	}, check)
	if firstErr != nil {
		return res, firstErr
	}
	if err != nil {
		return res, fmt.Errorf("%w; %s", err, rep.provenText())
	}
	for ; next < len(ts); next++ {
		if s := ts[next].seal; s.Seq <= start {
			rep.Before++
		} else if s.Seq > res.Last {
			return res, fmt.Errorf("%w: the warehouse checkpoint of %s seals record %d, but the store ends at record %d: records were deleted; %s",
				ErrTampered, s.Time.UTC().Format(time.RFC3339), s.Seq, res.Last, rep.provenText())
		}
	}
	return res, nil
}
