package cli_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/cli"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"version", "--json"}} {
		var out, errb bytes.Buffer
		root := cli.Root(&out, &errb, func(string) string { return "" })
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errb.String())
		}
		if len(args) == 1 {
			if !strings.HasPrefix(out.String(), "floe ") || !strings.Contains(out.String(), "go: "+runtime.Version()) {
				t.Fatalf("version: %q", out.String())
			}
			continue
		}
		var b cli.BuildInfo
		if err := json.Unmarshal(out.Bytes(), &b); err != nil || b.GoVersion != runtime.Version() || b.Version == "" ||
			b.Platform != runtime.GOOS+"/"+runtime.GOARCH {
			t.Fatalf("version --json: %v %q", err, out.String())
		}
	}
}
