package console

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestAssetsSetNoHTML: no console script inserts markup (innerHTML,
// outerHTML, insertAdjacentHTML, document.write) or evaluates strings
// (eval, new Function), so names, tags, filters and SQL from the server
// can only ever become text; every script is a module of this origin.
func TestAssetsSetNoHTML(t *testing.T) {
	bad := regexp.MustCompile(`\.(innerHTML|outerHTML)\s*[+]?=|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function\s*\(|createContextualFragment|DOMParser`)
	var scripts int
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		scripts++
		b, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if bad.MatchString(line) {
				t.Errorf("%s:%d sets markup or evaluates a string: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scripts < 3 {
		t.Fatalf("found %d scripts under assets/, want app.js, govern.js and browse.js at least", scripts)
	}
}
