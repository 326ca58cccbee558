package cli

import (
	"strings"
	"testing"
)

// TestPrincipalDisableLastAdmin: `floe principal disable` refuses to disable
// the only enabled administrator and says why; with a second admin it works.
func TestPrincipalDisableLastAdmin(t *testing.T) {
	data := []string{"--data-dir", t.TempDir(), "--log-level", "error"}
	// An offline command creates no admin of its own (the first serve
	// does, once its listeners are bound): create the only one here.
	if _, err := run(t, append([]string{"principal", "create", "admin", "--admin"}, data...)...); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, append([]string{"principal", "disable", "admin"}, data...)...)
	if err == nil || !strings.Contains(err.Error(), "only enabled administrator") {
		t.Fatalf("disabling the only admin: %v, want a refusal naming the reason", err)
	}
	if _, err := run(t, append([]string{"principal", "create", "ops", "--admin"}, data...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, append([]string{"principal", "disable", "admin"}, data...)...); err != nil {
		t.Fatalf("disabling one of two admins: %v", err)
	}
	out, err := run(t, append([]string{"principal", "list"}, data...)...)
	if err != nil || !strings.Contains(out, "admin") {
		t.Fatalf("list: %q %v", out, err)
	}
	if _, err := run(t, append([]string{"principal", "disable", "ops"}, data...)...); err == nil || !strings.Contains(err.Error(), "only enabled administrator") {
		t.Fatalf("disabling the last enabled admin ops: %v, want a refusal", err)
	}
}
