package sharing_test

import (
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/sharing"
)

// TestLimits: each bound is hit, named with its setting, and leaves room
// again once something is removed.
func TestLimits(t *testing.T) {
	e := newEnv(t, filepath.Join(t.TempDir(), "floe.db"), sharing.Limits{Shares: 2, ObjectsPerShare: 1, Recipients: 1, TokensPerRecipient: 2})
	ctx := t.Context()
	for _, n := range []string{"a", "b"} {
		_, err := e.svc.CreateShare(ctx, admin, n, "", "")
		must(t, err)
	}
	_, err := e.svc.CreateShare(ctx, admin, "c", "", "")
	wantErr(t, err, floe.Unprocessable, "limit reached: at most 2 shares (setting sharing.max_shares)")
	must(t, e.svc.DropShare(ctx, admin, "b"))
	_, err = e.svc.CreateShare(ctx, admin, "c", "", "")
	must(t, err)

	_, err = e.svc.AddObject(ctx, admin, "a", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.leads"})
	must(t, err)
	_, err = e.svc.AddObject(ctx, admin, "a", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts"})
	wantErr(t, err, floe.Unprocessable, "at most 1 objects per share (setting sharing.max_objects_per_share)")
	_, err = e.svc.AddObject(ctx, admin, "c", sharing.ObjectSpec{Kind: sharing.ObjectTable, Name: "crm.accounts"})
	must(t, err) // the bound is per share

	_, _, err = e.svc.CreateRecipient(ctx, admin, sharing.RecipientSpec{Name: "r1"})
	must(t, err)
	_, _, err = e.svc.CreateRecipient(ctx, admin, sharing.RecipientSpec{Name: "r2"})
	wantErr(t, err, floe.Unprocessable, "at most 1 recipients (setting sharing.max_recipients)")

	// Two live tokens: the first rotation keeps the old one in its grace.
	_, err = e.svc.RotateToken(ctx, admin, "r1", -1)
	must(t, err)
	_, err = e.svc.RotateToken(ctx, admin, "r1", -1)
	wantErr(t, err, floe.Unprocessable, "at most 2 tokens per recipient (setting sharing.max_tokens_per_recipient)")
	// An immediate rotation revokes the old ones and so has room.
	_, err = e.svc.RotateToken(ctx, admin, "r1", 0)
	must(t, err)
	d, err := e.svc.Recipient(ctx, admin, "r1")
	must(t, err)
	live := 0
	for _, tk := range d.Tokens {
		if tk.Live(e.clock.Now()) {
			live++
		}
	}
	if live != 1 || len(d.Tokens) > 3 {
		t.Errorf("tokens %d (%d live), want at most 3 kept and 1 live", len(d.Tokens), live)
	}
}
