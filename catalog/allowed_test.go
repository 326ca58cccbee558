package catalog

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe"
)

// TestAllowedLocations: with allowed storage locations configured, a table
// or view location inside the warehouse or an allowed prefix is accepted;
// one outside every prefix (or escaping one with "..", or a sibling that
// only shares a name prefix) is refused with a clear Invalid error; the
// roots themselves and the reserved prefix stay refused for tables.
func TestAllowedLocations(t *testing.T) {
	wh := Warehouse{Name: "floe", Location: "s3://floe"}
	allowed, err := NormalizeAllowedLocations([]string{"file:///tmp/rck/", "s3://other/lake"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		loc   string
		table bool // checked as a table location (else as any location)
		ok    bool
	}{
		{"s3://floe/ns/t", true, true},
		{"file:///tmp/rck/ns/t", true, true},
		{"file:/tmp/rck/ns/t", true, true},
		{"/tmp/rck/ns/view", false, true},
		{"s3://other/lake/ns/t", true, true},
		{"file:///tmp/rck", true, false},          // an allowed root itself
		{"s3://floe", true, false},                // the warehouse root
		{"s3://floe/_floe/x", true, false},        // reserved
		{"file:///tmp/rck/../etc", true, false},   // escapes
		{"file:///tmp/rck-other/t", true, false},  // shares only a name prefix
		{"file:///etc/passwd", false, false},      // outside
		{"s3://other/lakehouse/t", true, false},   // shares only a name prefix
		{"s3://evil/ns/t", true, false},           // another bucket
		{"file:///tmp/rck/ns/t?x=1", true, false}, // query
		{"gs://floe/ns/t", true, false},           // another scheme
	}
	for _, tt := range tests {
		t.Run(tt.loc, func(t *testing.T) {
			check := checkAllowed
			if tt.table {
				check = checkTableAllowed
			}
			_, err := check(wh, allowed, tt.loc)
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok=%v", err, tt.ok)
			}
			if err != nil && floe.KindOf(err) != floe.Invalid {
				t.Errorf("kind %v, want Invalid", floe.KindOf(err))
			}
		})
	}
	// Without allowed locations (the default) only the warehouse is allowed,
	// and the message says so.
	_, err = checkTableAllowed(wh, nil, "file:///tmp/rck/ns/t")
	if err == nil || !strings.Contains(floe.PublicMessage(err), `is outside warehouse "floe"`) {
		t.Errorf("default: %v", err)
	}
	_, err = checkTableAllowed(wh, allowed, "file:///etc/t")
	if err == nil || !strings.Contains(floe.PublicMessage(err), "allowed storage locations (file:///tmp/rck, s3://other/lake)") {
		t.Errorf("message does not name the allowed locations: %v", err)
	}
	for _, bad := range []string{"file:///", "/", "s3://", "relative/path"} {
		if _, err := NormalizeAllowedLocations([]string{bad}); err == nil {
			t.Errorf("NormalizeAllowedLocations(%q) accepted", bad)
		}
	}
}
