package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/testkit"
)

// TestTombstoneCommands: floe table tombstones lists what the caller may
// release (everything for the admin, its own for alice, nothing for bob);
// release-location refuses a non-owner with the reason, releases for the
// owner, and works in process on the data directory as the operator.
func TestTombstoneCommands(t *testing.T) {
	f := testkit.Start(t)
	payroll := f.CreateTable(t, "hr", "payroll").Metadata.Location
	if r := f.Do(t, "DELETE", f.P("/namespaces/hr/tables/payroll"), nil); r.Status != 204 {
		t.Fatalf("admin drop: %d %s", r.Status, r.Body)
	}
	f.CreateTable(t, "sandbox", "seed")
	alice, bob := f.NewPrincipal(t, "alice"), f.NewPrincipal(t, "bob")
	if r := f.Do(t, "POST", "/api/v1/grants", map[string]any{"grantee": map[string]any{"kind": "principal", "name": "alice"},
		"privilege": "CREATE_TABLE", "on": map[string]any{"kind": "namespace", "namespace": []string{"sandbox"}}}); r.Status != 201 {
		t.Fatalf("grant: %d %s", r.Status, r.Body)
	}
	aliceTok := f.TokenFor(t, alice.ClientID, alice.Secret)
	r := f.DoAs(t, aliceTok, "POST", f.P("/namespaces/sandbox/tables"), map[string]any{"name": "mine",
		"schema": json.RawMessage(`{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}`)})
	if r.Status != 200 {
		t.Fatalf("alice create: %d %s", r.Status, r.Body)
	}
	var tb testkit.Table
	r.JSON(t, &tb)
	mine := tb.Metadata.Location
	if r := f.DoAs(t, aliceTok, "DELETE", f.P("/namespaces/sandbox/tables/mine"), nil); r.Status != 204 {
		t.Fatalf("alice drop: %d %s", r.Status, r.Body)
	}
	as := func(cred string, args ...string) (string, error) {
		return run(t, append(args, "--url", f.URL, "--credential", cred, "--warehouse", f.Warehouse)...)
	}

	out, err := as(f.Cred.String(), "table", "tombstones")
	if err != nil || !strings.Contains(out, payroll) || !strings.Contains(out, "hr.payroll") || !strings.Contains(out, "admin") ||
		!strings.Contains(out, mine) || !strings.Contains(out, "alice") {
		t.Fatalf("admin list: %q, %v", out, err)
	}
	out, err = as(alice.String(), "table", "tombstones", "--json")
	if err != nil || !strings.Contains(out, mine) || strings.Contains(out, payroll) {
		t.Fatalf("alice list: %q, %v", out, err)
	}
	out, err = as(bob.String(), "table", "tombstones")
	if err != nil || strings.TrimSpace(out) != "no tombstones" {
		t.Fatalf("bob list: %q, %v", out, err)
	}
	_, err = as(bob.String(), "table", "release-location", mine)
	if err == nil || !strings.Contains(err.Error(), "only the previous owner of dropped table sandbox.mine or an administrator may release its location") ||
		!strings.Contains(err.Error(), "403") {
		t.Fatalf("bob release: %v", err)
	}
	out, err = as(alice.String(), "table", "release-location", mine)
	if err != nil || !strings.Contains(out, "released "+mine+" (dropped table sandbox.mine)") {
		t.Fatalf("alice release: %q, %v", out, err)
	}
	if _, err = as(alice.String(), "table", "release-location", mine); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("second release: %v", err)
	}

	// In process, as the operator.
	local := []string{"--data-dir", f.Dir, "--warehouse", f.Warehouse, "--log-level", "error"}
	out, err = run(t, append([]string{"table", "tombstones"}, local...)...)
	if err != nil || !strings.Contains(out, payroll) || strings.Contains(out, mine) {
		t.Fatalf("local list: %q, %v", out, err)
	}
	out, err = run(t, append([]string{"table", "release-location", payroll}, local...)...)
	if err != nil || !strings.Contains(out, "released "+payroll) {
		t.Fatalf("local release: %q, %v", out, err)
	}
	out, err = run(t, append([]string{"table", "tombstones"}, local...)...)
	if err != nil || strings.TrimSpace(out) != "no tombstones" {
		t.Fatalf("local list after release: %q, %v", out, err)
	}
	out, err = run(t, append([]string{"audit", "tail", "-n", "20"}, local...)...)
	if err != nil || strings.Count(out, "mgmt.tombstone.release") != 4 {
		t.Errorf("audit: want 4 release events (bob denied, alice, alice 404, cli):\n%s %v", out, err)
	}
}
