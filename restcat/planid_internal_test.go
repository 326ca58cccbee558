package restcat

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// macSigner is a PlanSigner with an HMAC key, as every node would share.
type macSigner struct{ key []byte }

func (m macSigner) SignScanPlan(_ context.Context, msg []byte) (string, []byte, error) {
	h := hmac.New(sha256.New, m.key)
	h.Write(msg)
	return "k1", h.Sum(nil), nil
}

func (m macSigner) VerifyScanPlan(ctx context.Context, kid string, msg, sig []byte) error {
	_, want, _ := m.SignScanPlan(ctx, msg)
	if kid != "k1" || !hmac.Equal(sig, want) {
		return errors.New("bad signature")
	}
	return nil
}

func testPlanner(now *time.Time, key string) *planner {
	return newPlanner(Planning{Signer: macSigner{[]byte(key)}, TTL: time.Minute, Now: func() time.Time { return *now }}, 0)
}

func testHandle() planHandle {
	snap := int64(42)
	return planHandle{key: planKey{table: "uuid-1", snapshot: 42, start: -1, filter: "true", caseSensitive: true, pageSize: 7,
		policy: "region = 'eu'"}, principal: "p1/alice", table: "uuid-1", req: planRequest{SnapshotID: &snap, Select: []string{"id"}}}
}

// TestSignedPlanID: a signed plan id opens to its handle (the policy as a
// digest) until it expires, and not under another key, tampered or too
// large.
func TestSignedPlanID(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	p := testPlanner(&now, "shared")
	hd := testHandle()
	id, err := p.issuePlanID(t.Context(), hd, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := p.openPlanID(t.Context(), id)
	if !ok {
		t.Fatalf("own plan id %s does not open", id)
	}
	if got.principal != hd.principal || got.table != hd.table || got.key.pageSize != 7 || *got.req.SnapshotID != 42 ||
		got.key.policy != policyDigest(hd.key.policy) || strings.Contains(inflated(t, id), "region") {
		t.Errorf("opened %+v, want %+v with the policy as a digest", got, hd)
	}
	if !samePolicy(&got, &planPolicy{canon: "region = 'eu'"}) || got.key != hd.key {
		t.Errorf("samePolicy: key %+v, want %+v", got.key, hd.key)
	}
	other := testPlanner(&now, "another deployment")
	if _, ok := other.openPlanID(t.Context(), id); ok {
		t.Error("a plan id opens under another key")
	}
	parts := strings.Split(id, ".")
	for name, bad := range map[string]string{
		"payload changed":   parts[0] + "." + flipB64(parts[1]) + "." + parts[2] + "." + parts[3],
		"signature changed": parts[0] + "." + parts[1] + "." + parts[2] + "." + flipB64(parts[3]),
		"kid changed":       parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString([]byte("k2")) + "." + parts[3],
		"too long":          id + strings.Repeat("A", maxSignedPlanID),
		"random id":         newPlanID(),
	} {
		if _, ok := p.openPlanID(t.Context(), bad); ok {
			t.Errorf("%s: opens", name)
		}
	}
	now = now.Add(time.Minute)
	if _, ok := p.openPlanID(t.Context(), id); ok {
		t.Error("an expired plan id opens")
	}
}

// TestSignedPlanIDInflateBound: a signed payload that inflates beyond
// maxSignedPlanBytes is refused (a plan id holds a request, never more).
func TestSignedPlanIDInflateBound(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	p := testPlanner(&now, "shared")
	var buf bytes.Buffer
	zw, _ := flate.NewWriter(&buf, flate.BestCompression)
	_, _ = zw.Write([]byte(`{"n":"`))
	_, _ = zw.Write(bytes.Repeat([]byte("a"), maxSignedPlanBytes))
	_, _ = zw.Write([]byte(`","e":2000000000}`))
	_ = zw.Close()
	payload := base64.RawURLEncoding.EncodeToString(buf.Bytes())
	kid, sig, _ := p.cfg.Signer.SignScanPlan(t.Context(), []byte(payload))
	id := signedPlanPrefix + payload + "." + base64.RawURLEncoding.EncodeToString([]byte(kid)) + "." + base64.RawURLEncoding.EncodeToString(sig)
	if len(id) > maxSignedPlanID {
		t.Fatalf("test payload does not fit a plan id: %d bytes", len(id))
	}
	if _, ok := p.openPlanID(t.Context(), id); ok {
		t.Error("a payload inflating beyond the bound opens")
	}
}

// inflated returns the JSON payload of a signed plan id.
func inflated(t *testing.T, id string) string {
	t.Helper()
	z, err := base64.RawURLEncoding.DecodeString(strings.Split(id, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(flate.NewReader(bytes.NewReader(z))); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func flipB64(s string) string {
	c := byte('A')
	if s[0] == 'A' {
		c = 'B'
	}
	return string(c) + s[1:]
}

// FuzzOpenPlanID: no input makes openPlanID panic, and only an id the
// signer made opens.
func FuzzOpenPlanID(f *testing.F) {
	now := time.Unix(1_000_000, 0)
	p := testPlanner(&now, "shared")
	id, err := p.issuePlanID(context.Background(), testHandle(), now.Add(time.Minute))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(id)
	f.Add("fp1.e30.azE.")
	f.Add("fp1...")
	f.Fuzz(func(t *testing.T, s string) {
		hd, ok := p.openPlanID(context.Background(), s)
		if ok && s != id {
			// another encoding of the same signed bytes is possible only
			// if base64 decoding is not canonical: it must describe the
			// same plan.
			if hd.principal != "p1/alice" || hd.table != "uuid-1" {
				t.Fatalf("%q opens to %+v", s, hd)
			}
		}
	})
}
