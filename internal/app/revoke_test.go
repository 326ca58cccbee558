package app

import (
	"testing"
	"time"
)

// TestCredentialTTLDefaults: STS credentials, which cannot be recalled,
// default to the shortest lifetime STS allows; embedded ones to an hour; a
// set value is kept.
func TestCredentialTTLDefaults(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want time.Duration
	}{
		{"embedded", nil, time.Hour},
		{"sts", map[string]string{"FLOE_STORAGE": "s3", "FLOE_WAREHOUSE_LOCATION": "s3://bucket/wh",
			"FLOE_S3_ROLE_ARN": "arn:aws:iam::123456789012:role/floe-vend"}, 15 * time.Minute},
		{"sts, set", map[string]string{"FLOE_STORAGE": "s3", "FLOE_WAREHOUSE_LOCATION": "s3://bucket/wh",
			"FLOE_S3_ROLE_ARN": "arn:aws:iam::123456789012:role/floe-vend", "FLOE_CREDENTIAL_TTL": "2h"}, 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			c.DataDir = t.TempDir()
			if err := c.LoadEnv(func(k string) string { return tt.env[k] }); err != nil {
				t.Fatal(err)
			}
			if err := c.Finish(); err != nil {
				t.Fatal(err)
			}
			if c.CredentialTTL != tt.want {
				t.Errorf("credential TTL %s, want %s", c.CredentialTTL, tt.want)
			}
		})
	}
}
