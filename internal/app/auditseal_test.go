package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// TestAuditSealLoop: a running node writes checkpoints of the audit head
// into the warehouse every audit_checkpoint_interval, create-only; an
// oversized object under the prefix is refused by the bounded read.
func TestAuditSealLoop(t *testing.T) {
	f := testkit.Start(t, func(c *app.Config) { c.AuditCheckpointInterval = 100 * time.Millisecond })
	ctx := context.Background()
	if _, err := f.App.Audit().Append(ctx, audit.Event{Action: "test.seal", Outcome: audit.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	head, _, err := f.App.Store().AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := f.App.SealObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rep audit.SealReport
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, rep, err = f.App.Audit().VerifySeals(ctx, objs); err != nil {
			t.Fatal(err)
		}
		if rep.Proven >= head {
			break
		}
	}
	if rep.Proven < head || rep.Trusted == 0 || len(rep.Ignored) != 0 {
		t.Fatalf("no checkpoint of record %d within 20s: %+v", head, rep)
	}
	names, err := objs.ListSeals(ctx, "", 1000)
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	// Create-only: an existing checkpoint is never replaced.
	if err := objs.CreateSeal(ctx, names[0], []byte("{}")); floe.KindOf(err) != floe.Conflict {
		t.Fatalf("overwriting %s: %v", names[0], err)
	}
	// The read is bounded.
	big := "99999999999999999999.json"
	if err := objs.CreateSeal(ctx, big, []byte(strings.Repeat("x", 1<<20))); err != nil {
		t.Fatal(err)
	}
	if _, err := objs.ReadSeal(ctx, big, 64<<10); floe.KindOf(err) != floe.Invalid {
		t.Fatalf("reading a 1 MiB object with a 64 KiB bound: %v", err)
	}
	if _, rep, err = f.App.Audit().VerifySeals(ctx, objs); err != nil || len(rep.Ignored) != 1 {
		t.Fatalf("verify with an oversized object: %+v %v", rep, err)
	}
}
