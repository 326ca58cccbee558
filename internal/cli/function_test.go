package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/testkit"
)

const cliUDF = `{"function-uuid":"42fd3f91-bc10-41c1-8a52-92b57dd0a9b2","format-version":1,"doc":"Adds one",
 "definitions":[{"definition-id":"int","parameters":[{"name":"x","type":"int"}],"return-type":"int","function-type":"udf",
  "versions":[{"version-id":1,"representations":[{"type":"sql","dialect":"spark","sql":"x + 1"}],"timestamp-ms":1734507000123}],
  "current-version-id":1}],
 "definition-log":[{"timestamp-ms":1734507000123,"definition-versions":[{"definition-id":"int","version-id":1}]}]}`

// TestFunctionCommands: floe function create|replace|list|show|drop run
// against a real server; failures name the rule, privilege or object.
func TestFunctionCommands(t *testing.T) {
	f := testkit.Start(t)
	admin := map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": f.Cred.String()}
	_, secret, err := f.App.Auth().CreatePrincipal(t.Context(), "viewer", nil, false, "viewer-id", "")
	if err != nil {
		t.Fatal(err)
	}
	viewer := map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": "viewer-id:" + secret}
	dir := t.TempDir()
	good := filepath.Join(dir, "add_one.json")
	v2 := filepath.Join(dir, "v2.json")
	bad := filepath.Join(dir, "bad.json")
	for p, s := range map[string]string{good: cliUDF, v2: strings.Replace(cliUDF, `"x + 1"`, `"1 + x"`, 1),
		bad: strings.Replace(cliUDF, `"definition-id":"int"`, `"definition-id":"long"`, 1)} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := runCLI(t, "", admin, "namespace", "create", "analytics"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		env     map[string]string
		args    []string
		wantOut []string
		wantErr []string
	}{
		{"create", admin, []string{"function", "create", "analytics.add_one", "--file", good}, []string{"created function analytics.add_one (metadata s3://"}, nil},
		{"create again", admin, []string{"function", "create", "analytics.add_one", "--file", good}, nil, []string{"409", "already exists"}},
		{"create invalid", admin, []string{"function", "create", "analytics.other", "--file", bad}, nil, []string{"400", `definition-id must be "int"`}},
		{"create without --file", admin, []string{"function", "create", "analytics.other"}, nil, []string{"--file is required"}},
		{"create without the privilege", viewer, []string{"function", "create", "analytics.mine", "--file", good}, nil, []string{"viewer", "lacks CREATE_VIEW", "403"}},
		{"replace", admin, []string{"function", "replace", "analytics.add_one", "--file", v2}, []string{"replaced function analytics.add_one"}, nil},
		{"replace with a stale --if-match", admin, []string{"function", "replace", "analytics.add_one", "--file", v2, "--if-match", "s3://nope"}, nil, []string{"409"}},
		{"replace a missing function", admin, []string{"function", "replace", "analytics.nope", "--file", v2}, nil, []string{"404", "NoSuchFunctionException"}},
		{"list", admin, []string{"function", "list", "analytics"}, []string{"analytics.add_one\n"}, nil},
		{"list without the privilege", viewer, []string{"function", "list", "analytics"}, nil, []string{"viewer", "lacks DESCRIBE", "403"}},
		{"show", admin, []string{"function", "show", "analytics.add_one"}, []string{"function analytics.add_one (uuid 42fd3f91-bc10-41c1-8a52-92b57dd0a9b2, secure false)", "add_one(x) [int] udf -> \"int\", version 1 of 1, dialects spark"}, nil},
		{"show a missing function", admin, []string{"function", "show", "analytics.nope"}, nil, []string{"404", "NoSuchFunctionException"}},
		{"drop", admin, []string{"function", "drop", "analytics.add_one"}, []string{"dropped function analytics.add_one"}, nil},
		{"drop again", admin, []string{"function", "drop", "analytics.add_one"}, nil, []string{"404"}},
		{"list after drop", admin, []string{"function", "list", "analytics"}, nil, nil},
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
		if s.name == "list after drop" && out != "" {
			t.Errorf("list after drop: %q", out)
		}
	}
	// show --json is the LoadFunctionResult.
	if _, _, err := runCLI(t, "", admin, "function", "create", "analytics.add_one", "--file", good); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "", admin, "function", "show", "--json", "analytics.add_one")
	var res struct {
		Location string         `json:"metadata-location"`
		Metadata map[string]any `json:"metadata"`
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Metadata["function-uuid"] != "42fd3f91-bc10-41c1-8a52-92b57dd0a9b2" {
		t.Errorf("show --json: %q %v", out, err)
	}
}
