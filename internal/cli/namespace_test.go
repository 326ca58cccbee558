package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/testkit"
)

// TestNamespaceAndTableCommands: floe namespace create|list|show|
// set-property|drop, floe ingest --create-namespace and floe table
// list|rename|drop run against a real server with the caller's
// credentials, and their failures say what went wrong: the privilege
// missing, the namespace or table not found, the name taken, the
// namespace not empty.
func TestNamespaceAndTableCommands(t *testing.T) {
	f := testkit.Start(t)
	admin := map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": f.Cred.String()}
	_, secret, err := f.App.Auth().CreatePrincipal(t.Context(), "viewer", nil, false, "viewer-id", "")
	if err != nil {
		t.Fatal(err)
	}
	viewer := map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": "viewer-id:" + secret}
	csv := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(csv, []byte("id,amount\n1,9.5\n2,3.25\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		env     map[string]string
		args    []string
		wantOut []string // substrings of stdout
		wantErr []string // substrings of the error; nil: success
		notOut  []string // substrings stdout must not hold
	}{
		{name: "ingest into a missing namespace says how to create it", env: admin,
			args:    []string{"ingest", "--quiet", "sales.orders", csv},
			wantErr: []string{"sales", "floe namespace create sales", "--create-namespace"}},
		{name: "ingest --create-namespace (the --help example)", env: admin,
			args:    []string{"ingest", "--quiet", "--create-namespace", "sales.orders", csv},
			wantOut: []string{"create sales.orders: 2 rows"}},
		{name: "ingest --create-namespace into an existing namespace", env: admin,
			args:    []string{"ingest", "--quiet", "--create-namespace", "sales.orders", csv},
			wantOut: []string{"append sales.orders: 2 rows"}},
		{name: "ingest --create-namespace creates nested levels", env: admin,
			args:    []string{"ingest", "--quiet", "--create-namespace", "crm.emea.leads", csv},
			wantOut: []string{"create crm.emea.leads: 2 rows"}},
		{name: "grant the viewer MODIFY on sales.orders", env: admin,
			args: []string{"grant", "MODIFY", "ON", "table", "sales.orders", "TO", "principal", "viewer", "--data-dir", f.Dir, "--log-level", "error"}},
		{name: "ingest --create-namespace by a principal that may load but not create namespaces", env: viewer,
			args:    []string{"ingest", "--quiet", "--create-namespace", "sales.orders", csv},
			wantOut: []string{"append sales.orders: 2 rows"}},
		{name: "ingest --create-namespace of a missing namespace without the privilege", env: viewer,
			args:    []string{"ingest", "--quiet", "--create-namespace", "mine.orders", csv},
			wantErr: []string{"viewer", "lacks", "403"}},
		{name: "create with properties", env: admin,
			args:    []string{"namespace", "create", "hr", "--property", "owner=people-team", "--property", "comment=Staff data"},
			wantOut: []string{"created namespace hr"}},
		{name: "create again: already exists", env: admin,
			args: []string{"namespace", "create", "hr"}, wantErr: []string{"hr", "already exists", "409"}},
		{name: "create --if-not-exists", env: admin,
			args: []string{"namespace", "create", "--if-not-exists", "hr"}, wantOut: []string{"namespace hr exists already"}},
		{name: "create nested without parent", env: admin,
			args: []string{"namespace", "create", "nowhere.deep"}, wantErr: []string{"nowhere", "create the parent namespace first"}},
		{name: "create: bad property", env: admin,
			args: []string{"namespace", "create", "x", "--property", "novalue"}, wantErr: []string{"KEY=VALUE"}},
		{name: "create without the privilege", env: viewer,
			args: []string{"namespace", "create", "mine"}, wantErr: []string{"viewer", "lacks CREATE_NAMESPACE", "403"}},
		{name: "list", env: admin,
			args: []string{"namespace", "list"}, wantOut: []string{"sales\n", "crm\n", "hr\n"}, notOut: []string{"crm.emea"}},
		{name: "list under a parent", env: admin,
			args: []string{"namespace", "list", "crm"}, wantOut: []string{"crm.emea\n"}},
		{name: "list as a principal without grants", env: viewer,
			args: []string{"namespace", "list"}, wantErr: []string{"viewer", "lacks DESCRIBE", "403"}},
		{name: "show", env: admin,
			args: []string{"namespace", "show", "hr"}, wantOut: []string{"namespace hr\n", "  comment = Staff data\n", "  owner = people-team\n"}},
		{name: "show a missing namespace", env: admin,
			args: []string{"namespace", "show", "nope"}, wantErr: []string{"nope", "404", "NoSuchNamespaceException"}},
		{name: "set-property", env: admin,
			args:    []string{"namespace", "set-property", "hr", "retention=30d", "--property", "tier=gold", "--remove", "owner", "--remove", "ghost"},
			wantOut: []string{"namespace hr: set retention, tier; removed owner; not set, so not removed: ghost"}},
		{name: "show after set-property", env: admin,
			args: []string{"namespace", "show", "hr"}, wantOut: []string{"  retention = 30d\n", "  tier = gold\n"}, notOut: []string{"owner"}},
		{name: "set-property with nothing to do", env: admin,
			args: []string{"namespace", "set-property", "hr"}, wantErr: []string{"give properties"}},
		{name: "set-property without the privilege", env: viewer,
			args: []string{"namespace", "set-property", "hr", "a=b"}, wantErr: []string{"viewer", "403"}},
		{name: "table list", env: admin,
			args: []string{"table", "list", "sales"}, wantOut: []string{"sales.orders\n"}},
		{name: "table list of a missing namespace", env: admin,
			args: []string{"table", "list", "nope"}, wantErr: []string{"nope", "404"}},
		{name: "table rename", env: admin,
			args: []string{"table", "rename", "sales.orders", "hr.orders"}, wantOut: []string{"renamed table sales.orders to hr.orders"}},
		{name: "table list after rename", env: admin,
			args: []string{"table", "list", "hr"}, wantOut: []string{"hr.orders\n"}},
		{name: "table rename of a missing table", env: admin,
			args: []string{"table", "rename", "sales.orders", "hr.again"}, wantErr: []string{"sales.orders", "404"}},
		{name: "table rename onto an existing table", env: admin,
			args: []string{"table", "rename", "crm.emea.leads", "hr.orders"}, wantErr: []string{"409", "AlreadyExists"}},
		{name: "table drop without the privilege", env: viewer,
			args: []string{"table", "drop", "hr.orders"}, wantErr: []string{"viewer", "403"}},
		{name: "drop a namespace that is not empty", env: admin,
			args: []string{"namespace", "drop", "hr"}, wantErr: []string{"hr", "409", "NamespaceNotEmpty"}},
		{name: "table drop --purge", env: admin,
			args: []string{"table", "drop", "--purge", "hr.orders"}, wantOut: []string{"dropped table hr.orders; its files are being deleted"}},
		{name: "table drop", env: admin,
			args: []string{"table", "drop", "crm.emea.leads"}, wantOut: []string{"dropped table crm.emea.leads (its files stay"}},
		{name: "table drop of a missing table", env: admin,
			args: []string{"table", "drop", "hr.orders"}, wantErr: []string{"hr.orders", "404", "NoSuchTable"}},
		{name: "namespace drop", env: admin,
			args: []string{"namespace", "drop", "hr"}, wantOut: []string{"dropped namespace hr"}},
		{name: "namespace drop of a missing namespace", env: admin,
			args: []string{"namespace", "drop", "hr"}, wantErr: []string{"hr", "404"}},
		{name: "no credential", env: map[string]string{"FLOE_URL": f.URL},
			args: []string{"namespace", "list"}, wantErr: []string{"--credential"}},
	}
	for _, s := range steps {
		out, _, err := runCLI(t, "", s.env, s.args...)
		switch {
		case s.wantErr == nil && err != nil:
			t.Errorf("%s: %v", s.name, err)
			continue
		case s.wantErr != nil && err == nil:
			t.Errorf("%s: succeeded (%q), want an error with %q", s.name, out, s.wantErr)
			continue
		}
		for _, w := range s.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", s.name, err, w)
			}
		}
		for _, w := range s.wantOut {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output %q lacks %q", s.name, out, w)
			}
		}
		for _, w := range s.notOut {
			if strings.Contains(out, w) {
				t.Errorf("%s: output %q holds %q", s.name, out, w)
			}
		}
	}
	// --json of list.
	out, _, err := runCLI(t, "", admin, "namespace", "list", "--json")
	var nss [][]string
	if err != nil || json.Unmarshal([]byte(out), &nss) != nil || len(nss) != 2 {
		t.Errorf("list --json: %q %v", out, err)
	}
}
