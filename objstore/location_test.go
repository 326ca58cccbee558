package objstore_test

import (
	"testing"

	"github.com/floe-lake/floe/objstore"
)

func TestLocationPrefix(t *testing.T) {
	for _, tc := range []struct {
		loc, bucket, prefix string
		ok                  bool
	}{
		{"s3://floe/crm/accounts-0a1b", "floe", "crm/accounts-0a1b/", true},
		{"s3://floe/crm/accounts-0a1b/", "floe", "crm/accounts-0a1b/", true},
		{"S3A://floe//crm/t//", "floe", "crm/t/", true},
		{"s3n://b/a%20b", "b", "a%20b/", true}, // literal, not unescaped
		{"s3://floe", "", "", false},
		{"s3://floe/", "", "", false},
		{"s3:///x", "", "", false},
		{"file:///tmp/x", "", "", false},
		{"", "", "", false},
	} {
		b, p, ok := objstore.LocationPrefix(tc.loc)
		if b != tc.bucket || p != tc.prefix || ok != tc.ok {
			t.Errorf("LocationPrefix(%q) = %q, %q, %v; want %q, %q, %v", tc.loc, b, p, ok, tc.bucket, tc.prefix, tc.ok)
		}
	}
}
