package restcat

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/floe-lake/floe"
)

// PlanSigner signs plan ids with a key every node sharing the metadata
// store holds (auth.Service's token-signing keys), so that any node
// answers a plan id or plan task another node handed out.
type PlanSigner interface {
	// SignScanPlan signs msg, returning the key's id and the signature.
	SignScanPlan(ctx context.Context, msg []byte) (kid string, sig []byte, err error)
	// VerifyScanPlan returns nil if sig is kid's signature of msg.
	VerifyScanPlan(ctx context.Context, kid string, msg, sig []byte) error
}

// A signed plan id is "fp1.<payload>.<kid>.<signature>", each part
// base64url: the payload is the deflated JSON of signedPlan, everything a
// node needs to plan the same files again and to check who may use it.
const signedPlanPrefix = "fp1."

// Bounds of a signed plan id, checked before anything else is done with
// it (it comes from the client).
const (
	maxSignedPlanID    = 32 << 10
	maxSignedPlanBytes = 256 << 10 // the payload, inflated
)

// signedPlan is a plan id's payload.
type signedPlan struct {
	Nonce     string      `json:"n"` // makes each plan id unique
	Principal string      `json:"p"`
	Table     string      `json:"t"` // table uuid
	Expires   int64       `json:"e"` // unix seconds
	Async     bool        `json:"a,omitempty"`
	Epoch     int64       `json:"v,omitempty"` // revocation version at issue (PlanCancels)
	Key       wirePlanKey `json:"k"`
	Req       planRequest `json:"r"`
}

// wirePlanKey is a planKey in a signed plan id.
type wirePlanKey struct {
	Snapshot       int64  `json:"s"`
	Start          int64  `json:"st"`
	Filter         string `json:"f"`
	CaseSensitive  bool   `json:"cs,omitempty"`
	SnapshotSchema bool   `json:"ss,omitempty"`
	Selected       string `json:"sel,omitempty"`
	Stats          string `json:"sf,omitempty"`
	Current        bool   `json:"c,omitempty"`
	Policy         string `json:"pol,omitempty"`
	PageSize       int    `json:"ps"`
}

func toWireKey(k planKey) wirePlanKey {
	return wirePlanKey{Snapshot: k.snapshot, Start: k.start, Filter: k.filter, CaseSensitive: k.caseSensitive,
		SnapshotSchema: k.snapshotSchema, Selected: k.selected, Stats: k.stats, Current: k.current, Policy: policyDigest(k.policy), PageSize: k.pageSize}
}

// policyDigest is a row policy as a signed plan id carries it: a plan id
// is signed, not encrypted, and the caller may not know its policy.
func policyDigest(canon string) string {
	if canon == "" {
		return ""
	}
	d := sha256.Sum256([]byte(canon))
	return "h:" + hex.EncodeToString(d[:])
}

// samePolicy reports whether handle hd was planned under the caller's row
// policy pol, and gives an opened plan id's handle the policy itself in
// place of its digest.
func samePolicy(hd *planHandle, pol *planPolicy) bool {
	if hd.key.policy == pol.key() {
		return true
	}
	if strings.HasPrefix(hd.key.policy, "h:") && hd.key.policy == policyDigest(pol.key()) {
		hd.key.policy = pol.key()
		return true
	}
	return false
}

func (w wirePlanKey) key(table string) planKey {
	return planKey{table: table, snapshot: w.Snapshot, start: w.Start, filter: w.Filter, caseSensitive: w.CaseSensitive,
		snapshotSchema: w.SnapshotSchema, selected: w.Selected, stats: w.Stats, current: w.Current, policy: w.Policy, pageSize: w.PageSize}
}

// issuePlanID returns the id of a new plan of handle hd, expiring at
// expires: signed and self-describing when the planner has a signer, a
// random id known to this node only otherwise.
func (p *planner) issuePlanID(ctx context.Context, hd planHandle, expires time.Time) (string, error) {
	if p.cfg.Signer == nil {
		return newPlanID(), nil
	}
	sp := signedPlan{Nonce: newPlanID(), Principal: hd.principal, Table: hd.table, Expires: expires.Unix(), Async: hd.async, Epoch: hd.epoch,
		Key: toWireKey(hd.key), Req: hd.req}
	js, err := json.Marshal(sp)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw, _ := flate.NewWriter(&buf, flate.BestCompression) // the level is valid
	_, _ = zw.Write(js)                                   // a bytes.Buffer does not fail
	_ = zw.Close()
	payload := base64.RawURLEncoding.EncodeToString(buf.Bytes())
	kid, sig, err := p.cfg.Signer.SignScanPlan(ctx, []byte(payload))
	if err != nil {
		return "", err
	}
	return signedPlanPrefix + payload + "." + base64.RawURLEncoding.EncodeToString([]byte(kid)) + "." +
		base64.RawURLEncoding.EncodeToString(sig), nil
}

// openPlanID returns the handle a signed plan id describes, if its
// signature is one of the shared keys' and it has not expired. Any other
// id (tampered, unsigned, of another deployment, malformed) is not ok.
func (p *planner) openPlanID(ctx context.Context, planID string) (planHandle, bool) {
	if p.cfg.Signer == nil || len(planID) > maxSignedPlanID {
		return planHandle{}, false
	}
	rest, ok := strings.CutPrefix(planID, signedPlanPrefix)
	if !ok {
		return planHandle{}, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return planHandle{}, false
	}
	kid, err1 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err2 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || len(kid) == 0 {
		return planHandle{}, false
	}
	if err := p.cfg.Signer.VerifyScanPlan(ctx, string(kid), []byte(parts[0]), sig); err != nil {
		return planHandle{}, false
	}
	z, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return planHandle{}, false
	}
	js, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), maxSignedPlanBytes+1))
	if err != nil || len(js) > maxSignedPlanBytes {
		return planHandle{}, false
	}
	var sp signedPlan
	if err := json.Unmarshal(js, &sp); err != nil {
		return planHandle{}, false
	}
	exp := time.Unix(sp.Expires, 0)
	if !p.now().Before(exp) {
		return planHandle{}, false
	}
	return planHandle{key: sp.Key.key(sp.Table), principal: sp.Principal, table: sp.Table, req: sp.Req, async: sp.Async, expires: exp, epoch: sp.Epoch}, true
}

func (p *planner) now() time.Time {
	if p.cfg.Now != nil {
		return p.cfg.Now()
	}
	return time.Now()
}

// shortPlanID is a plan id as error messages name it: a signed one is long.
func shortPlanID(id string) string {
	if len(id) > 40 {
		return id[:32] + "..."
	}
	return id
}

// PlanCancels shares cancelled plans among the nodes (the revocation list
// every node keeps current, see package revoke).
type PlanCancels interface {
	// CancelScanPlan records, for every node, that the plan whose id has
	// digest subject is cancelled until expires.
	CancelScanPlan(ctx context.Context, subject string, expires time.Time) error
	// PlanCancelled reports whether the plan whose id has digest subject,
	// issued at epoch, was cancelled on any node.
	PlanCancelled(subject string, epoch int64) bool
	// Epoch is the current revocation version, bound into each plan id.
	Epoch() int64
}

// planDigest is a plan id's name in the shared cancels: short, and for a
// signed id as unique as its nonce.
func planDigest(planID string) string {
	d := sha256.Sum256([]byte(planID))
	return hex.EncodeToString(d[:16])
}

// epoch returns the revocation version to bind into a new plan id.
func (p *planner) epoch() int64 {
	if p.cfg.Cancels == nil {
		return 0
	}
	return p.cfg.Cancels.Epoch()
}

// cancelledElsewhere reports whether plan id planID (of handle hd) was
// cancelled on any node.
func (p *planner) cancelledElsewhere(planID string, epoch int64) bool {
	return p.cfg.Cancels != nil && p.cfg.Cancels.PlanCancelled(planDigest(planID), epoch)
}

// shareCancel records a cancel for every node; the plan id expires at
// expires (zero: the TTL from now).
func (p *planner) shareCancel(ctx context.Context, planID string, expires time.Time) error {
	if p.cfg.Cancels == nil {
		return nil
	}
	if expires.IsZero() {
		expires = p.now().Add(p.cfg.TTL)
	}
	if err := p.cfg.Cancels.CancelScanPlan(ctx, planDigest(planID), expires); err != nil {
		return floe.Wrap(floe.Unavailable, err, "cannot cancel the plan: retry")
	}
	return nil
}
