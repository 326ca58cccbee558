package federation_test

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe/federation"
)

// TestFinishWrites: writes are off by default; with writes: true a
// configured catalog needs a separate write credential (read from its
// environment variable, never the read one), write keys without writes
// are refused, and auth none cannot write.
func TestFinishWrites(t *testing.T) {
	env := map[string]string{"READ": "read-secret", "WRITE": "write-secret", "SAME": "read-secret"}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct {
		name string
		c    federation.Catalog
		want string // "" ok, else a part of the error
		// check inspects a finished catalog.
		check func(federation.Catalog) bool
	}{
		{"off by default", federation.Catalog{Name: "a", URI: "https://r.example", Auth: "oauth2", ClientID: "r", ClientSecretEnv: "READ"}, "",
			func(c federation.Catalog) bool { return !c.Writes && c.WriteClientSecret == "" }},
		{"oauth2", federation.Catalog{Name: "a", URI: "https://r.example", Auth: "oauth2", ClientID: "r", ClientSecretEnv: "READ",
			Writes: true, WriteClientID: "w", WriteClientSecretEnv: "WRITE"}, "",
			func(c federation.Catalog) bool {
				return c.WriteClientSecret == "write-secret" && c.ClientSecret == "read-secret"
			}},
		{"bearer", federation.Catalog{Name: "a", URI: "https://r.example", Auth: "bearer", TokenEnv: "READ", Writes: true, WriteTokenEnv: "WRITE"}, "",
			func(c federation.Catalog) bool { return c.WriteToken == "write-secret" }},
		{"sigv4, external id inherited", federation.Catalog{Name: "a", URI: "https://glue.example/iceberg", Auth: "sigv4", Region: "us-east-1",
			RoleARN: "arn:aws:iam::123456789012:role/r", ExternalID: "ext-1", Writes: true, WriteRoleARN: "arn:aws:iam::123456789012:role/w"}, "",
			func(c federation.Catalog) bool { return c.WriteExternalID == "ext-1" }},
		{"bearer without write token", federation.Catalog{Name: "a", URI: "https://r.example", Auth: "bearer", TokenEnv: "READ", Writes: true},
			"auth bearer takes write_token_env", nil},
		{"bearer, write variable unset", federation.Catalog{Name: "a", URI: "https://r.example", Auth: "bearer", TokenEnv: "READ", Writes: true, WriteTokenEnv: "UNSET"},
			"UNSET (write_token_env) is empty", nil},
		{"bearer, same token", federation.Catalog{Name: "a", URI: "https://r.example", Auth: "bearer", TokenEnv: "READ", Writes: true, WriteTokenEnv: "SAME"},
			"the write token is the read token", nil},
		{"write key without writes", federation.Catalog{Name: "a", URI: "https://r.example", Auth: "bearer", TokenEnv: "READ", WriteTokenEnv: "WRITE"},
			"write_token_env is set but writes is not", nil},
		{"none", federation.Catalog{Name: "a", URI: "https://r.example", Writes: true}, "auth none has none", nil},
		{"sigv4 bad write role", federation.Catalog{Name: "a", URI: "https://glue.example/iceberg", Auth: "sigv4", Region: "us-east-1",
			Writes: true, WriteRoleARN: "writer"}, "write_role_arn \"writer\" is not an IAM role ARN", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := []federation.Catalog{tt.c}
			err := federation.Finish(cs, getenv)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !tt.check(cs[0]) {
					t.Fatalf("finished %+v", cs[0])
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Finish = %v, want an error about %q", err, tt.want)
			}
			for _, secret := range []string{"read-secret", "write-secret"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error carries a secret: %v", err)
				}
			}
		})
	}
}
