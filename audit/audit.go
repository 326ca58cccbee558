// Package audit keeps Floe's append-only, hash-chained audit log. Every
// record carries the SHA-256 of the previous record's hash and its own
// canonical encoding, so that changing or deleting any stored record (the
// newest ones included: the store keeps the head of the chain apart) makes
// Verify fail.
//
// The log is general: an Event names who (principal, client address), what
// (action, resource), the outcome and free-form detail. Callers must never
// put secrets, tokens or keys into an event.
package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// Outcomes of an audited action: success; failure (the caller's mistake,
// e.g. a missing table); denied (a missing privilege or scope);
// unauthenticated (no valid credentials); error (the server's fault).
const (
	OutcomeSuccess         = "success"
	OutcomeFailure         = "failure"
	OutcomeDenied          = "denied"
	OutcomeUnauthenticated = "unauthenticated"
	OutcomeError           = "error"
)

// Event is what a caller records.
type Event struct {
	// Time is when it happened; zero means now.
	Time       time.Time
	RequestID  string
	Principal  string // principal name, "" when unknown
	ClientAddr string // the caller's network address
	Action     string // e.g. "oauth.token.issue"
	Resource   string // what the action was on, e.g. "principal:etl"
	Outcome    string // OutcomeSuccess, OutcomeFailure, ...
	// Detail is encoded as a canonical JSON object (keys sorted).
	Detail map[string]any
}

// Record is a stored event with its place in the chain.
type Record struct {
	Seq        int64
	Time       time.Time // UTC, microsecond precision
	RequestID  string
	Principal  string
	ClientAddr string
	Action     string
	Resource   string
	Outcome    string
	Detail     []byte // canonical JSON object, hashed byte for byte
	PrevHash   string // hex; "" for the first record
	Hash       string // hex sha256(PrevHash bytes || canonical record)
}

// TextBytes is the length of r's variable-length fields (its strings and
// detail): what sizes a record, before any fixed overhead.
func (r Record) TextBytes() int {
	return len(r.RequestID) + len(r.Principal) + len(r.ClientAddr) + len(r.Action) + len(r.Resource) +
		len(r.Outcome) + len(r.Detail) + len(r.PrevHash) + len(r.Hash)
}

// Store persists records. Implementations must serialize appends, also
// across processes sharing the store.
type Store interface {
	// AppendAudit reads the seq and hash of the last record (0 and "" for an
	// empty log), calls seal with them and stores the record seal returns,
	// together with the new head, in one transaction. seal may be called
	// more than once if the transaction is retried.
	AppendAudit(ctx context.Context, seal func(prevSeq int64, prevHash string) (Record, error)) (Record, error)
	// AppendAuditBatch is AppendAudit for several records at once: seal
	// returns records that continue the chain from prevSeq/prevHash, and all
	// of them are stored in one transaction with the new head.
	AppendAuditBatch(ctx context.Context, seal func(prevSeq int64, prevHash string) ([]Record, error)) error
	// AuditRecords returns up to limit records with Seq > after, in Seq order.
	AuditRecords(ctx context.Context, after int64, limit int) ([]Record, error)
	// AuditHead returns the seq and hash of the last appended record as
	// kept in the head (0 and "" for an empty log).
	AuditHead(ctx context.Context) (seq int64, hash string, err error)
}

// Options configures a Log. Zero values mean defaults.
type Options struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives a line for every failed append.
	Logger *slog.Logger
	// Signer signs the checkpoints pruning writes and verifies them. A Log
	// without one cannot prune, nor verify a pruned log.
	Signer Signer
	// Tail, if set, is given every record once it is stored.
	Tail *Tail
}

// Log appends to and verifies the chain in a Store.
type Log struct {
	store  Store
	now    func() time.Time
	log    *slog.Logger
	signer Signer
	tail   *Tail
}

// New returns a Log over store.
func New(store Store, opts Options) *Log {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Log{store: store, now: opts.Now, log: opts.Logger, signer: opts.Signer, tail: opts.Tail}
}

// Append records e at the end of the chain and returns the stored record.
func (l *Log) Append(ctx context.Context, e Event) (Record, error) {
	r, err := l.record(e)
	if err != nil {
		return Record{}, err
	}
	out, err := l.store.AppendAudit(ctx, func(prevSeq int64, prevHash string) (Record, error) {
		rs := []Record{r}
		err := sealChain(rs, prevSeq, prevHash)
		return rs[0], err
	})
	if err != nil {
		l.log.ErrorContext(ctx, "audit: append failed", "action", e.Action, "request_id", e.RequestID, "err", err)
		return Record{}, fmt.Errorf("audit: append %s: %w", e.Action, err)
	}
	if l.tail != nil {
		l.tail.Add([]Record{out})
	}
	return out, nil
}

// AppendBatch records events in order, chained, in one store transaction.
func (l *Log) AppendBatch(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	rs := make([]Record, 0, len(events))
	for _, e := range events {
		r, err := l.record(e)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	err := l.store.AppendAuditBatch(ctx, func(prevSeq int64, prevHash string) ([]Record, error) {
		return rs, sealChain(rs, prevSeq, prevHash)
	})
	if err != nil {
		l.log.ErrorContext(ctx, "audit: batch append failed", "events", len(events), "err", err)
		return fmt.Errorf("audit: append %d events: %w", len(events), err)
	}
	if l.tail != nil {
		l.tail.Add(rs)
	}
	return nil
}

// sealChain links rs after the record (prevSeq, prevHash), in order, and
// fills in their hashes.
func sealChain(rs []Record, prevSeq int64, prevHash string) error {
	for i := range rs {
		rs[i].Seq, rs[i].PrevHash = prevSeq+1, prevHash
		h, err := hashRecord(rs[i])
		if err != nil {
			return err
		}
		rs[i].Hash = h
		prevSeq, prevHash = rs[i].Seq, h
	}
	return nil
}

// record turns an event into an unsealed record.
func (l *Log) record(e Event) (Record, error) {
	t := e.Time
	if t.IsZero() {
		t = l.now()
	}
	detail := []byte("{}")
	if len(e.Detail) > 0 {
		b, err := json.Marshal(e.Detail) // map keys are sorted: canonical
		if err != nil {
			return Record{}, fmt.Errorf("audit: encode detail of %s: %w", e.Action, err)
		}
		detail = b
	}
	return Record{Time: t.UTC().Truncate(time.Microsecond), RequestID: e.RequestID, Principal: e.Principal,
		ClientAddr: e.ClientAddr, Action: e.Action, Resource: e.Resource, Outcome: e.Outcome, Detail: detail}, nil
}

// ErrTampered is wrapped by the errors Verify returns for a broken chain.
var ErrTampered = errors.New("audit log tampered")

// verifyPage is how many records Verify reads at a time.
const verifyPage = 1000

// Verify walks the chain and reports the first record that was modified,
// deleted or inserted out of order, wrapping ErrTampered. See VerifyChain.
func (l *Log) Verify(ctx context.Context) error {
	_, err := l.VerifyChain(ctx)
	return err
}

// VerifyResult says what VerifyChain checked.
type VerifyResult struct {
	// Records is how many stored records were checked.
	Records int64
	// First and Last are the seqs of the first and last record checked
	// (0 when none is stored).
	First, Last int64
	// Head is the hash of the last record.
	Head string
	// Checkpoint is the newest checkpoint the walk started from, nil when
	// the log was never pruned.
	Checkpoint *Checkpoint
}

// verifyAttempts bounds how often VerifyChain starts again because a
// concurrent prune moved the checkpoint while it walked.
const verifyAttempts = 3

// VerifyChain walks the chain and reports the first record that was
// modified, deleted or inserted out of order, wrapping ErrTampered. When
// the log was pruned, the walk starts from the newest checkpoint: its
// signature must verify and the first kept record must link to it.
func (l *Log) VerifyChain(ctx context.Context) (VerifyResult, error) {
	return l.verifyWith(ctx, nil, nil)
}

// verifyWith is VerifyChain with hooks: onStart is called with the seq the
// walk starts after (the pruning checkpoint's, or 0), onRecord with every
// record after it has been checked; onRecord returning false stops the
// walk (the caller keeps its own error).
func (l *Log) verifyWith(ctx context.Context, onStart func(from int64), onRecord func(Record) bool) (VerifyResult, error) {
	for attempt := 1; ; attempt++ {
		res, sc, err := l.walk(ctx, onStart, onRecord)
		if err == nil || !errors.Is(err, ErrTampered) || attempt >= verifyAttempts {
			return res, err
		}
		// A prune may have cut the chain while the walk ran: then the
		// checkpoint moved, and the walk starts again from it.
		cs, ok := l.store.(Checkpoints)
		if !ok {
			return res, err
		}
		now, has, cerr := cs.AuditCheckpoint(ctx)
		if cerr != nil || !has || now.Seq == sc.Seq {
			return res, err
		}
	}
}

// walk is one walk of the chain (see verifyWith).
func (l *Log) walk(ctx context.Context, onStart func(from int64), onRecord func(Record) bool) (VerifyResult, SignedCheckpoint, error) {
	var res VerifyResult
	// The head is read first: an append writes its record and the head in one
	// transaction, so every record up to this head exists for the walk below,
	// and records appended while the walk runs are checked too, not taken for
	// tampering.
	hs, hh, err := l.store.AuditHead(ctx)
	if err != nil {
		return res, SignedCheckpoint{}, fmt.Errorf("audit: verify: %w", err)
	}
	var seq int64
	prev, atHead := "", ""
	var sc SignedCheckpoint
	if cs, ok := l.store.(Checkpoints); ok {
		var has bool
		if sc, has, err = cs.AuditCheckpoint(ctx); err != nil {
			return res, sc, fmt.Errorf("audit: verify: %w", err)
		}
		if has {
			c, err := open(ctx, l.signer, sc)
			if err != nil {
				return res, sc, err
			}
			res.Checkpoint = &c
			seq, prev = c.Seq, c.Hash
			if seq == hs {
				atHead = prev
			}
		}
	}
	if onStart != nil {
		onStart(seq)
	}
	for {
		rs, err := l.store.AuditRecords(ctx, seq, verifyPage)
		if err != nil {
			return res, sc, fmt.Errorf("audit: verify: %w", err)
		}
		for _, r := range rs {
			switch {
			case r.Seq != seq+1:
				return res, sc, fmt.Errorf("%w: record %d is missing (next is %d)", ErrTampered, seq+1, r.Seq)
			case r.PrevHash != prev && res.Records == 0 && res.Checkpoint != nil:
				return res, sc, fmt.Errorf("%w: record %d does not link to the checkpoint (record %d)", ErrTampered, r.Seq, seq)
			case r.PrevHash != prev:
				return res, sc, fmt.Errorf("%w: record %d does not link to record %d", ErrTampered, r.Seq, seq)
			}
			h, err := hashRecord(r)
			if err != nil {
				return res, sc, fmt.Errorf("%w: record %d: %w", ErrTampered, r.Seq, err)
			}
			if h != r.Hash {
				return res, sc, fmt.Errorf("%w: record %d was modified", ErrTampered, r.Seq)
			}
			if res.Records == 0 {
				res.First = r.Seq
			}
			res.Records++
			seq, prev = r.Seq, r.Hash
			res.Last = seq
			if seq == hs {
				atHead = h
			}
			if onRecord != nil && !onRecord(r) {
				return res, sc, nil
			}
		}
		if len(rs) < verifyPage {
			break
		}
	}
	if seq < hs || atHead != hh {
		return res, sc, fmt.Errorf("%w: the log ends at record %d but %d records were appended", ErrTampered, seq, hs)
	}
	res.Head = prev
	return res, sc, nil
}

// canonical is the hashed form of a record's fields: fixed field order and
// fixed-width UTC time. The detail bytes follow it exactly as stored.
type canonical struct {
	Seq        int64  `json:"seq"`
	Time       string `json:"time"`
	RequestID  string `json:"request_id"`
	Principal  string `json:"principal"`
	ClientAddr string `json:"client_addr"`
	Action     string `json:"action"`
	Resource   string `json:"resource"`
	Outcome    string `json:"outcome"`
}

// timeLayout renders record times with a fixed width.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// hashRecord returns hex(sha256(prev hash bytes || canonical JSON of r's
// fields, newline-terminated || detail bytes)): the JSON line is self-delimiting, so
// the concatenation is unambiguous, and the detail is hashed byte for byte.
func hashRecord(r Record) (string, error) {
	prev, err := hex.DecodeString(r.PrevHash)
	if err != nil {
		return "", fmt.Errorf("previous hash is not hex: %w", err)
	}
	if !json.Valid(r.Detail) || !bytes.HasPrefix(bytes.TrimSpace(r.Detail), []byte("{")) {
		return "", errors.New("detail is not a JSON object")
	}
	line, err := canonicalLine(r)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(line) // ends with a newline
	h.Write(r.Detail)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// canonicalLine returns the canonical JSON line of r's fields: what a
// json.Encoder without HTML escaping writes for canonical{...}. Fields
// that JSON would escape take the encoder itself; the common case, plain
// printable ASCII, is written directly (byte for byte the same).
func canonicalLine(r Record) ([]byte, error) {
	t := r.Time.UTC().Format(timeLayout)
	fields := [...]string{t, r.RequestID, r.Principal, r.ClientAddr, r.Action, r.Resource, r.Outcome}
	n := 120
	for _, f := range fields {
		if !plainJSON(f) {
			return encodeCanonical(r, t)
		}
		n += len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	for i, name := range [...]string{`,"time":"`, `","request_id":"`, `","principal":"`, `","client_addr":"`,
		`","action":"`, `","resource":"`, `","outcome":"`} {
		b = append(b, name...)
		b = append(b, fields[i]...)
	}
	return append(b, "\"}\n"...), nil
}

// plainJSON reports whether JSON writes s inside quotes unchanged:
// printable ASCII without quote or backslash.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// encodeCanonical is canonicalLine by encoding/json.
func encodeCanonical(r Record, t string) ([]byte, error) {
	c := canonical{Seq: r.Seq, Time: t, RequestID: r.RequestID, Principal: r.Principal,
		ClientAddr: r.ClientAddr, Action: r.Action, Resource: r.Resource, Outcome: r.Outcome}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return buf.Bytes(), nil
}
