package cli

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/app"
)

// secretOf returns the client id and secret printed by principal create
// or rotate-secret.
func secretOf(t *testing.T, out string) (id, secret string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "client_id":
			id = strings.TrimSpace(v)
		case "client_secret":
			secret = strings.TrimSpace(v)
		}
	}
	if id == "" || secret == "" {
		t.Fatalf("no client id and secret in %q", out)
	}
	return id, secret
}

// TestPrincipalRotateCommands: rotate-secret prints a new secret that
// works while the old one is refused (at once, or after --grace);
// revoke-tokens refuses a token issued before it.
func TestPrincipalRotateCommands(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data-dir", dir, "--log-level", "error"}
	out, err := run(t, append([]string{"principal", "create", "etl"}, data...)...)
	if err != nil {
		t.Fatal(err)
	}
	id, first := secretOf(t, out)
	out, err = run(t, append([]string{"principal", "rotate-secret", "etl", "--grace", "1h"}, data...)...)
	if err != nil || !strings.Contains(out, "old secret:    works until ") {
		t.Fatalf("rotate-secret --grace: %q %v", out, err)
	}
	_, second := secretOf(t, out)
	out, err = run(t, append([]string{"principal", "rotate-secret", "etl"}, data...)...)
	if err != nil {
		t.Fatalf("rotate-secret: %q %v", out, err)
	}
	_, third := secretOf(t, out)
	for _, args := range [][]string{{"rotate-secret", "ghost"}, {"rotate-secret", "etl", "--grace", "-1s"}, {"revoke-tokens", "ghost"}} {
		if _, err := run(t, append(append([]string{"principal"}, args...), data...)...); err == nil {
			t.Errorf("principal %v succeeded", args)
		}
	}

	cfg := app.Defaults()
	cfg.DataDir = dir
	a, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := context.Background()
	for _, tt := range []struct {
		name, secret string
		ok           bool
	}{{"first", first, false}, {"second (rotated without grace)", second, false}, {"third", third, true}} {
		if _, err := a.Auth().Authenticate(ctx, id, tt.secret); (err == nil) != tt.ok {
			t.Errorf("%s secret: %v, want ok %v", tt.name, err, tt.ok)
		}
	}

	etl, err := a.Auth().Authenticate(ctx, id, third)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := a.Auth().Issue(ctx, etl, etl.Scopes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Auth().Verify(ctx, issued.AccessToken); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, append([]string{"principal", "revoke-tokens", "etl"}, data...)...)
	if err != nil || !strings.Contains(out, "tokens of etl issued before ") {
		t.Fatalf("revoke-tokens: %q %v", out, err)
	}
	if _, err := a.Auth().Verify(ctx, issued.AccessToken); err == nil {
		t.Error("a token issued before revoke-tokens still verifies")
	}
	recs, err := a.Store().AuditRecords(ctx, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, rec := range recs {
		for _, s := range []string{first, second, third} {
			if strings.Contains(string(rec.Detail), s) {
				t.Errorf("a secret in audit record %d: %s", rec.Seq, rec.Detail)
			}
		}
		if rec.Principal == "(cli)" && rec.Resource == "principal:etl" {
			actions[rec.Action+" "+rec.Outcome]++
		}
	}
	if actions["mgmt.principal.rotate_secret success"] != 2 || actions["mgmt.principal.revoke_tokens success"] != 1 {
		t.Errorf("audit events of the commands: %v", actions)
	}
}
