package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// runStdin runs floe with args and stdin.
func runStdin(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := Root(&out, &errOut, func(string) string { return "" })
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestPrincipalPassword: set-password stores a SCRAM verifier of the
// password read from stdin (never the password), clear-password removes it.
func TestPrincipalPassword(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data-dir", dir, "--log-level", "error"}
	if _, err := run(t, append([]string{"principal", "create", "analyst"}, data...)...); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, stdin, who, errText string
	}{
		{"too short", "short\n", "analyst", "at least 12 characters"},
		{"empty", "", "analyst", "at least 12 characters"},
		{"unknown principal", "correct horse battery\n", "ghost", "Principal does not exist: ghost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runStdin(t, tt.stdin, append([]string{"principal", "set-password", tt.who}, data...)...)
			if err == nil || !strings.Contains(err.Error(), tt.errText) {
				t.Fatalf("err %v, want %q", err, tt.errText)
			}
		})
	}
	const pw = "correct horse battery staple"
	out, err := runStdin(t, pw+"\r\nignored\n", append([]string{"principal", "set-password", "analyst"}, data...)...)
	if err != nil || !strings.Contains(out, "SQL password set for analyst") {
		t.Fatalf("set-password: %q %v", out, err)
	}
	check := func() (string, bool) {
		cfg := app.Defaults()
		cfg.DataDir = dir
		a, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		p, v, ok, err := a.Auth().SQLPassword(context.Background(), "analyst")
		if err != nil {
			t.Fatal(err)
		}
		if ok && p.Name != "analyst" {
			t.Errorf("principal %+v", p)
		}
		return v, ok
	}
	v, ok := check()
	if !ok || strings.Contains(v, pw) {
		t.Fatalf("stored verifier %q (ok %v)", v, ok)
	}
	sv, err := pgwire.ParseScramVerifier(v)
	if err != nil {
		t.Fatal(err)
	}
	if !sv.Check(pw) || sv.Check(pw+"x") {
		t.Error("the stored verifier does not verify exactly the password given")
	}
	if _, err := run(t, append([]string{"principal", "clear-password", "analyst"}, data...)...); err != nil {
		t.Fatal(err)
	}
	if _, ok := check(); ok {
		t.Error("password still set after clear-password")
	}
}
