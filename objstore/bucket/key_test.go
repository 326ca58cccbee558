package bucket

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key  string
		code string
	}{
		{"a", ""},
		{"a/b/c.parquet", ""},
		{"dir/", ""},
		{"a b/ü€/x", ""},
		{"a-c", ""},
		{".hidden", ""},
		{"a/.floe", ""},
		{"..a/b..", ""},
		{strings.Repeat("a", 255), ""},
		{strings.Repeat("a/", 512), ""}, // 1024 bytes, trailing "/"
		{"", CodeInvalidArgument},
		{"/abs", CodeInvalidArgument},
		{"/", CodeInvalidArgument},
		{"../x", CodeInvalidArgument},
		{"a/../../x", CodeInvalidArgument},
		{"a/..", CodeInvalidArgument},
		{"..", CodeInvalidArgument},
		{".", CodeInvalidArgument},
		{"./a", CodeInvalidArgument},
		{"a/./b", CodeInvalidArgument},
		{"a//b", CodeInvalidArgument},
		{"a//", CodeInvalidArgument},
		{"a\x00b", CodeInvalidArgument},
		{`a\b`, CodeInvalidArgument},
		{`..\x`, CodeInvalidArgument},
		{"a\xffb", CodeInvalidArgument},
		{".floe-dir", CodeInvalidArgument},
		{"a/.floe-staging/x", CodeInvalidArgument},
		{"a/.floe-dir/", CodeInvalidArgument},
		{strings.Repeat("a", 256), CodeKeyTooLong},
		{strings.Repeat("a/", 512) + "b", CodeKeyTooLong},
	}
	for _, tt := range tests {
		name := tt.key
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			wantCode(t, ValidateKey(tt.key), tt.code)
		})
	}
}

// FuzzKey checks that every accepted key maps to a path that stays inside
// the root: relative, no "." or ".." or empty segment, no reserved name.
func FuzzKey(f *testing.F) {
	for _, k := range []string{"a", "a/b/", "../x", "a/../../x", "%2e%2e", "..", "a//b", ".floe-dir", "x/.floe-x/y",
		"a\x00", `a\b`, "/a", "dir/"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := ValidateKey(key)
		if err != nil {
			if CodeOf(err) == "" {
				t.Fatalf("error without code: %v", err)
			}
			return
		}
		if !utf8.ValidString(key) || len(key) == 0 || len(key) > MaxKeyLen {
			t.Fatalf("accepted %q", key)
		}
		p := filePath(key)
		if strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\x00\\") {
			t.Fatalf("key %q -> path %q", key, p)
		}
		segs := strings.Split(p, "/")
		for i, seg := range segs {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("key %q -> path %q has segment %q", key, p, seg)
			}
			if strings.HasPrefix(seg, reservedPrefix) && !(i == len(segs)-1 && seg == dirMarker && strings.HasSuffix(key, "/")) {
				t.Fatalf("key %q -> path %q uses reserved %q", key, p, seg)
			}
		}
	})
}
