package federation_test

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe/federation"
)

// TestFinishSigV4: auth sigv4 needs a region, defaults the signing name to
// glue and validates the role ARN and external id; it reads no secret.
func TestFinishSigV4(t *testing.T) {
	getenv := func(k string) string { t.Errorf("sigv4 read the environment variable %s", k); return "" }
	ok := func() federation.Catalog {
		return federation.Catalog{Name: "lake", URI: "https://glue.us-east-1.amazonaws.com/iceberg",
			Warehouse: "123456789012", Auth: federation.AuthSigV4, Region: "us-east-1"}
	}
	for _, tt := range []struct {
		name string
		mod  func(*federation.Catalog)
		want string // "" ok, else a part of the error
	}{
		{"defaults", func(*federation.Catalog) {}, ""},
		{"role and external id", func(c *federation.Catalog) {
			c.RoleARN, c.ExternalID = "arn:aws:iam::123456789012:role/floe-reader", "isv-7f3a"
		}, ""},
		{"gov partition", func(c *federation.Catalog) {
			c.Region, c.RoleARN = "us-gov-west-1", "arn:aws-us-gov:iam::123456789012:role/r"
		}, ""},
		{"s3 tables signing name", func(c *federation.Catalog) { c.SigningName = "s3tables" }, ""},
		{"no region", func(c *federation.Catalog) { c.Region = "" }, "region"},
		{"bad region", func(c *federation.Catalog) { c.Region = "US East" }, "region"},
		{"bad signing name", func(c *federation.Catalog) { c.SigningName = "Glue!" }, "signing_name"},
		{"bad role", func(c *federation.Catalog) { c.RoleARN = "floe-reader" }, "role_arn"},
		{"external id without role", func(c *federation.Catalog) { c.ExternalID = "x1" }, "external_id needs role_arn"},
		{"bad external id", func(c *federation.Catalog) {
			c.RoleARN, c.ExternalID = "arn:aws:iam::123456789012:role/r", "has space"
		}, "external_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok()
			tt.mod(&c)
			cs := []federation.Catalog{c}
			err := federation.Finish(cs, getenv)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cs[0].SigningName == "" || (c.SigningName == "" && cs[0].SigningName != "glue") {
					t.Fatalf("signing name not defaulted: %+v", cs[0])
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Finish = %v, want an error about %q", err, tt.want)
			}
		})
	}
}
