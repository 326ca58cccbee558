package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe"
)

func TestFS_PathConfinement(t *testing.T) {
	f, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := f.Root()
	tests := []struct {
		loc  string
		want floe.Kind
		ok   bool
	}{
		{"file://" + root + "/a/b.json", 0, true},
		{root + "/a/b.json", 0, true},
		{"file://" + root + "/../etc/passwd", floe.Forbidden, false},
		{root + "/a/../../x", floe.Forbidden, false},
		{"/etc/passwd", floe.Forbidden, false},
		{"s3://bucket/key", floe.Invalid, false},
		{"relative/path", floe.Invalid, false},
		{"file://otherhost" + root + "/x", floe.Invalid, false},
	}
	for _, tt := range tests {
		t.Run(tt.loc, func(t *testing.T) {
			_, err := f.Path(tt.loc)
			if tt.ok {
				if err != nil {
					t.Fatalf("Path(%q) = %v, want ok", tt.loc, err)
				}
				return
			}
			if err == nil || floe.KindOf(err) != tt.want {
				t.Fatalf("Path(%q) = %v, want kind %v", tt.loc, err, tt.want)
			}
		})
	}
}

func TestFS_WriteReadDelete(t *testing.T) {
	ctx := context.Background()
	f, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	loc := f.URI() + "/t/metadata/00000-x.metadata.json"
	if err := f.WriteFile(ctx, loc, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	got, err := f.ReadFile(ctx, loc)
	if err != nil || string(got) != `{"a":1}` {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Join(f.Root(), "t", "metadata"))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	if err := f.Delete(ctx, loc); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadFile(ctx, loc); floe.KindOf(err) != floe.NotFound {
		t.Fatalf("after delete: %v, want NotFound", err)
	}
	if err := f.Delete(ctx, loc); err != nil {
		t.Fatalf("deleting a missing file: %v", err)
	}
	if err := f.DeletePrefix(ctx, f.URI()); floe.KindOf(err) != floe.Forbidden {
		t.Fatalf("DeletePrefix(root) = %v, want Forbidden", err)
	}
}
