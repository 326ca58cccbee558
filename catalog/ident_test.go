package catalog

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe"
)

func TestIdentValidate(t *testing.T) {
	long := strings.Repeat("x", MaxNameLength+1)
	tests := []struct {
		name string
		id   Ident
		ok   bool
	}{
		{"simple", Ident{Namespace{"a"}, "t"}, true},
		{"nested", Ident{Namespace{"a", "b", "c"}, "t"}, true},
		{"dots allowed", Ident{Namespace{"a.b"}, "t.v"}, true},
		{"unicode", Ident{Namespace{"ventes"}, "données"}, true},
		{"empty ns", Ident{Namespace{}, "t"}, false},
		{"empty level", Ident{Namespace{""}, "t"}, false},
		{"empty name", Ident{Namespace{"a"}, ""}, false},
		{"slash", Ident{Namespace{"a"}, "x/y"}, false},
		{"backslash", Ident{Namespace{"a\\b"}, "t"}, false},
		{"dotdot", Ident{Namespace{".."}, "t"}, false},
		{"control", Ident{Namespace{"a"}, "t\x00"}, false},
		{"unit separator", Ident{Namespace{"a\x1fb"}, "t"}, false},
		{"too long", Ident{Namespace{"a"}, long}, false},
		{"invalid utf8", Ident{Namespace{"a"}, "\xff"}, false},
		{"too deep", Ident{make(Namespace, MaxNamespaceDepth+1), "t"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.id.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%v) = %v, want ok=%v", tt.id, err, tt.ok)
			}
			if err != nil && floe.KindOf(err) != floe.Invalid {
				t.Fatalf("kind %v, want Invalid", floe.KindOf(err))
			}
		})
	}
}

func TestCheckLocation(t *testing.T) {
	wh := Warehouse{Name: "w", Location: "file:///data/wh"}
	tests := []struct {
		loc, want string
		ok        bool
	}{
		{"file:///data/wh/ns/t", "file:///data/wh/ns/t", true},
		{"/data/wh/ns/t/", "file:///data/wh/ns/t", true},
		{"file:///data/wh/ns/../t", "file:///data/wh/t", true},
		{"file:///data/wh/../etc", "", false},
		{"file:///data/wh2/t", "", false},
		{"s3://bucket/data/wh/t", "", false},
		{"file:///data/wh/t?x=1", "", false},
		{"not a uri", "", false},
	}
	for _, tt := range tests {
		got, err := checkLocation(wh, tt.loc)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("checkLocation(%q) = %q, %v; want %q ok=%v", tt.loc, got, err, tt.want, tt.ok)
		}
	}
}

// TestTableLocationReserved: no table may sit in (or be) the warehouse's
// reserved _floe directory, where the audit checkpoints are written, or be
// the warehouse root; a table named like it elsewhere is fine.
func TestTableLocationReserved(t *testing.T) {
	wh := Warehouse{Name: "w", Location: "s3://floe"}
	for loc, ok := range map[string]bool{
		"s3://floe/_floe":                        false,
		"s3://floe/_floe/":                       false,
		"s3://floe/_floe/audit/checkpoints":      false,
		"s3://floe/_floe/x":                      false,
		"s3://floe/ns/../_floe/audit":            false,
		"s3://floe":                              false,
		"s3://floe/_floe_not/t":                  true,
		"s3://floe/ns/_floe/t":                   true,
		"s3://floe/_floe-abc123":                 true,
		"s3://floe/sandbox/_floe-0123456789abcd": true,
	} {
		_, err := checkTableLocation(wh, loc)
		if (err == nil) != ok {
			t.Errorf("checkTableLocation(%q): err %v, want ok=%v", loc, err, ok)
		}
	}
}

func TestMetadataVersion(t *testing.T) {
	tests := map[string]int{
		"file:///x/metadata/00000-abc.metadata.json": 0,
		"file:///x/metadata/00042-abc.metadata.json": 42,
		"s3://b/x/metadata/v7.metadata.json":         7,
		"s3://b/x/metadata/weird.json":               -1,
	}
	for loc, want := range tests {
		if got := metadataVersion(loc); got != want {
			t.Errorf("metadataVersion(%q) = %d, want %d", loc, got, want)
		}
	}
	if got := nextMetadataLocation("file:///x", "file:///x/metadata/00041-a.metadata.json"); !strings.HasPrefix(got, "file:///x/metadata/00042-") {
		t.Errorf("next location %q", got)
	}
}

// FuzzNamespaceKey: splitting a valid namespace's key gives it back.
func FuzzNamespaceKey(f *testing.F) {
	f.Add("a", "b")
	f.Add("sales", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		ns := Namespace{a}
		if b != "" {
			ns = append(ns, b)
		}
		if ns.Validate() != nil {
			return
		}
		back := ParseNamespaceKey(ns.Key())
		if back.Key() != ns.Key() || len(back) != len(ns) {
			t.Fatalf("round trip %q -> %q", ns, back)
		}
	})
}
