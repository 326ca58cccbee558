package cli

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
)

// TestAuthzCommands: roles, grants (named, all-tables, tag-based,
// filtered), listing, tags and revokes through the CLI change what the
// authorizer decides, and every change is audited.
func TestAuthzCommands(t *testing.T) {
	dir := t.TempDir()
	data := []string{"--data-dir", dir, "--log-level", "error"}
	must := func(want string, args ...string) string {
		t.Helper()
		out, err := run(t, append(args, data...)...)
		if err != nil {
			t.Fatalf("floe %s: %v", strings.Join(args, " "), err)
		}
		if !strings.Contains(out, want) {
			t.Fatalf("floe %s: output %q does not contain %q", strings.Join(args, " "), out, want)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		_, err := run(t, append(args, data...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("floe %s: error %v, want one containing %q", strings.Join(args, " "), err, want)
		}
	}

	must("client_id:", "principal", "create", "bi")
	must(`created role "analysts"`, "role", "create", "analysts", "--description", "BI team")
	fails("Role already exists: analysts", "role", "create", "analysts")
	must(`principal "bi" is a member of role "analysts"`, "role", "add-member", "analysts", "bi")
	must(`principal "carol" is a member of role "analysts"`, "role", "add-member", "analysts", "carol")
	if out := must("analysts", "role", "list"); !regexp.MustCompile(`analysts\s+bi,carol\s+BI team`).MatchString(out) {
		t.Errorf("role list: %q", out)
	}

	out := must(`granted SELECT on table "crm.accounts" to principal "bi" (id `, "grant", "SELECT", "ON", "table", "crm.accounts", "TO", "principal", "bi")
	selectID := regexp.MustCompile(`\(id ([0-9a-f]+)\)`).FindStringSubmatch(out)[1]
	must(`granted DESCRIBE on all tables in warehouse "floe" to role "analysts"`, "grant", "describe", "on", "warehouse", "floe", "to", "role", "analysts", "--all-tables")
	must(`granted SELECT on objects tagged "domain = sales AND sensitivity = low" in warehouse "floe" to role "analysts"`,
		"grant", "SELECT", "ON", "tags", "domain = sales AND sensitivity = low", "TO", "role", "analysts")
	must(`granted SELECT on table "crm.leads" to role "analysts" with a data filter`, "grant", "SELECT", "ON", "table", "crm.leads", "TO", "role", "analysts",
		"--row-filter", "region = 'EMEA'", "--exclude-columns", "email,phone")
	must(`granted MANAGE_GRANTS on namespace "crm.emea"`, "grant", "MANAGE_GRANTS", "ON", "namespace", "crm.emea", "TO", "principal", "bi")
	fails("covers no table unless all_tables is set", "grant", "SELECT", "ON", "namespace", "crm", "TO", "role", "analysts")
	fails("Grant already exists", "grant", "SELECT", "ON", "table", "crm.accounts", "TO", "principal", "bi")
	fails("a table is named namespace.name", "grant", "SELECT", "ON", "table", "accounts", "TO", "principal", "bi")
	fails("unknown privilege", "grant", "READ", "ON", "table", "crm.accounts", "TO", "principal", "bi")
	fails("want PRIVILEGE ON KIND NAME TO", "grant", "SELECT", "AT", "table", "crm.accounts", "TO", "principal", "bi")

	out = must("ID", "grants")
	if n := strings.Count(out, "\n") - 1; n != 5 {
		t.Errorf("grants lists %d, want 5:\n%s", n, out)
	}
	if !strings.Contains(out, `{"row_filter":"region = 'EMEA'","exclude_columns":["email","phone"]}`) || !strings.Contains(out, "(all tables)") {
		t.Errorf("grants output:\n%s", out)
	}
	for _, tt := range []struct {
		flags []string
		want  int
	}{{[]string{"--grantee", "bi"}, 2}, {[]string{"--grantee-kind", "role"}, 3}, {[]string{"--namespace", "crm"}, 3},
		{[]string{"--namespace", "crm", "--table", "accounts"}, 1}, {[]string{"--privilege", "SELECT"}, 3}, {[]string{"--warehouse", "other"}, 0}} {
		out := must("ID", append([]string{"grants"}, tt.flags...)...)
		if n := strings.Count(out, "\n") - 1; n != tt.want {
			t.Errorf("grants %v: %d, want %d:\n%s", tt.flags, n, tt.want, out)
		}
	}
	must("members:     bi, carol", "role", "show", "analysts")

	must(`tagged table "crm.deals"`, "tag", "set", "table", "crm.deals", "domain=sales", "sensitivity=low")
	must(`tagged column "notes" of table "crm.deals"`, "tag", "set", "table", "crm.deals", "sensitivity=high", "--column", "notes")
	must(`tagged namespace "crm"`, "tag", "set", "namespace", "crm", "owner=sales-ops")
	out = must("KEY", "tag", "show", "table", "crm.deals", "--column", "notes")
	for _, re := range []string{`owner\s+sales-ops\s+inherited`, `domain\s+sales\s+inherited`, `sensitivity\s+high\s+column "notes" of table "crm.deals"`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("tag show: %q does not match %s", out, re)
		}
	}
	fails("KEY=VALUE", "tag", "set", "table", "crm.deals", "oops")
	fails("columns belong to tables and views", "tag", "set", "namespace", "crm", "a=b", "--column", "c")

	// The decisions follow.
	ctx := context.Background()
	check := func(principal string, priv authz.Privilege, s authz.Securable) error {
		t.Helper()
		cfg := app.Defaults()
		cfg.DataDir = dir
		a, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(ctx)
		return a.Authz().Check(ctx, authz.Subject{Principal: principal}, priv, s)
	}
	crm := catalog.Namespace{"crm"}
	deals := authz.Table("floe", catalog.Ident{Namespace: crm, Name: "deals"})
	if err := check("carol", authz.Select, deals); err != nil {
		t.Errorf("carol (analysts) on the tagged table: %v", err)
	}
	must(`untagged table "crm.deals"`, "tag", "unset", "table", "crm.deals", "domain")
	if err := check("carol", authz.Select, deals); floe.KindOf(err) != floe.Forbidden ||
		floe.PublicMessage(err) != `principal "carol" lacks SELECT on table "crm.deals" (it has DESCRIBE)` {
		t.Errorf("carol after untagging: %v", err)
	}
	fails(`has no tag "domain"`, "tag", "unset", "table", "crm.deals", "domain")

	accounts := authz.Table("floe", catalog.Ident{Namespace: crm, Name: "accounts"})
	if err := check("bi", authz.Select, accounts); err != nil {
		t.Errorf("bi on crm.accounts: %v", err)
	}
	must(`revoked SELECT on table "crm.accounts" to principal "bi"`, "revoke", "SELECT", "ON", "table", "crm.accounts", "TO", "principal", "bi")
	fails("no grant of SELECT", "revoke", "SELECT", "ON", "table", "crm.accounts", "TO", "principal", "bi")
	fails("Grant does not exist: "+selectID, "revoke", "--id", selectID)
	if err := check("bi", authz.Select, accounts); floe.KindOf(err) != floe.Forbidden {
		t.Errorf("bi on crm.accounts after revoke: %v", err)
	}
	out = must("ID", "grants", "--grantee", "bi")
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	must("revoked grant "+id, "revoke", "--id", id)
	fails("either --id or the grant", "revoke", "--id", id, "SELECT")

	must(`principal "carol" is no longer a member of role "analysts"`, "role", "remove-member", "analysts", "carol")
	must(`dropped role "analysts"`, "role", "drop", "analysts")
	fails("Role does not exist: analysts", "role", "show", "analysts")
	if out := must("ID", "grants"); strings.Count(out, "\n") != 1 {
		t.Errorf("grants left after dropping the role and revoking:\n%s", out)
	}

	// Every change is in the audit log, made by "(cli)"; the chain verifies.
	must("audit log intact", "audit", "verify")
	cfg := app.Defaults()
	cfg.DataDir = dir
	a, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	recs, err := a.Store().AuditRecords(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range recs {
		if r.Principal == "(cli)" && strings.HasPrefix(r.Action, "mgmt.") {
			count[r.Action+" "+r.Outcome]++
		}
	}
	for k, want := range map[string]int{"mgmt.role.create success": 1, "mgmt.role.create failure": 1, "mgmt.role.member.add success": 2,
		"mgmt.grant.create success": 5, "mgmt.grant.create failure": 2, "mgmt.grant.revoke success": 1, "mgmt.grant.revoke failure": 1,
		"mgmt.grant.delete success": 1, "mgmt.grant.delete failure": 1, "mgmt.tag.set success": 3, "mgmt.tag.unset success": 1,
		"mgmt.tag.unset failure": 1, "mgmt.role.member.remove success": 1, "mgmt.role.drop success": 1} {
		if count[k] != want {
			t.Errorf("%d audit records %q, want %d (all: %v)", count[k], k, want, count)
		}
	}
}
