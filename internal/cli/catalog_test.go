package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/floe-lake/floe/internal/testkit"
)

// TestCatalogCommands: floe catalog federate reads the secret from stdin
// (never the command line), list and show say "set" and never print it,
// a non-administrator is refused with what it lacks named, drop.
func TestCatalogCommands(t *testing.T) {
	f := testkit.Start(t)
	admin := map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": f.Cred.String()}
	bobCred := f.NewPrincipal(t, "bob")
	bob := map[string]string{"FLOE_URL": f.URL, "FLOE_CREDENTIAL": bobCred.ClientID + ":" + bobCred.Secret}
	const secret, writeSecret = "remote-client-secret-42", "remote-write-secret-43"
	run := func(env map[string]string, stdin string, args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		root := Root(&out, &errOut, func(k string) string { return env[k] })
		root.SetIn(strings.NewReader(stdin))
		root.SetArgs(args)
		err := root.ExecuteContext(context.Background())
		return out.String() + errOut.String(), err
	}
	federate := []string{"catalog", "federate", "acme", "--uri", "http://127.0.0.1:9", "--warehouse", "floe", "--auth", "oauth2",
		"--client-id", "isv", "--client-secret-stdin", "--cache-ttl", "10s"}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		stdin   string
		args    []string
		wantOut []string
		wantErr string
	}{
		{name: "not an administrator", env: bob, stdin: secret + "\n", args: federate,
			wantErr: `principal "bob" is not an administrator: creating a foreign catalog requires an admin principal`},
		{name: "no secret on stdin", env: admin, args: federate, wantErr: "no client secret on stdin"},
		{name: "federate", env: admin, stdin: secret + "\n", args: federate,
			wantOut: []string{`created foreign catalog "acme"`, "secret: set"}},
		{name: "taken", env: admin, stdin: secret + "\n", args: federate, wantErr: `foreign catalog "acme" already exists`},
		{name: "two secret sources", env: admin, args: append(federate, "--client-secret-env", "X"), wantErr: "none of the others can be"},
		{name: "bearer from env needs the variable on the server", env: admin,
			args:    []string{"catalog", "federate", "tok", "--uri", "http://127.0.0.1:9", "--auth", "bearer", "--token-env", "NOT_SET_ON_SERVER"},
			wantErr: "the environment variable NOT_SET_ON_SERVER (token_env) is empty"},
		{name: "list", env: admin, args: []string{"catalog", "list"}, wantOut: []string{"acme", "api", "http://127.0.0.1:9", "oauth2", "set"}},
		{name: "show", env: admin, args: []string{"catalog", "show", "ACME"},
			wantOut: []string{"name:", "acme", "client id:", "isv", "cache ttl:", "10s", "secret:", "set", "by admin"}},
		{name: "list as bob", env: bob, args: []string{"catalog", "list"}, wantErr: "requires an admin principal"},
		{name: "writes need a write identity", env: admin, stdin: secret + "\n",
			args:    []string{"catalog", "federate", "w0", "--uri", "http://127.0.0.1:9", "--auth", "oauth2", "--client-id", "isv", "--client-secret-stdin", "--writes"},
			wantErr: "writes need a separate write credential"},
		{name: "writes with both secrets on stdin", env: admin, stdin: secret + "\n" + writeSecret + "\n",
			args: []string{"catalog", "federate", "w1", "--uri", "http://127.0.0.1:9", "--auth", "oauth2", "--client-id", "isv",
				"--client-secret-stdin", "--writes", "--write-client-id", "isv-writer", "--write-client-secret-stdin"},
			wantOut: []string{`created foreign catalog "w1"`, "writes forwarded with the write identity"}},
		{name: "no write secret on stdin", env: admin, stdin: secret + "\n",
			args: []string{"catalog", "federate", "w2", "--uri", "http://127.0.0.1:9", "--auth", "oauth2", "--client-id", "isv",
				"--client-secret-stdin", "--writes", "--write-client-id", "isv-writer", "--write-client-secret-stdin"},
			wantErr: "no write client secret on stdin (its second line)"},
		{name: "show writes", env: admin, args: []string{"catalog", "show", "w1"},
			wantOut: []string{"writes:", "on", "write client id:", "isv-writer", "write secret:", "set"}},
		{name: "sigv4", env: admin,
			args: []string{"catalog", "federate", "lake", "--uri", "http://127.0.0.1:9/iceberg", "--warehouse", "123456789012", "--auth", "sigv4",
				"--region", "eu-west-1", "--role-arn", "arn:aws:iam::123456789012:role/r", "--external-id", "ext-1"},
			wantOut: []string{`created foreign catalog "lake"`, "auth sigv4", "secret: none", "writes refused"}},
		{name: "show sigv4", env: admin, args: []string{"catalog", "show", "lake"},
			wantOut: []string{"region:", "eu-west-1", "signing name:", "glue", "role arn:", "arn:aws:iam::123456789012:role/r", "external id:", "ext-1", "writes:", "off"}},
		{name: "sigv4 without region", env: admin, args: []string{"catalog", "federate", "lake2", "--uri", "http://127.0.0.1:9", "--auth", "sigv4"},
			wantErr: "auth sigv4 needs region"},
		{name: "drop", env: admin, args: []string{"catalog", "drop", "acme"}, wantOut: []string{`dropped foreign catalog "acme"`}},
		{name: "drop again", env: admin, args: []string{"catalog", "drop", "acme"}, wantErr: `foreign catalog "acme" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.env, tc.stdin, tc.args...)
			if strings.Contains(out, secret) || strings.Contains(out, writeSecret) || (err != nil && (strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), writeSecret))) {
				t.Fatalf("the secret was printed: %s %v", out, err)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q (out %s)", err, tc.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (out %s)", err, out)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
