package vend_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/vend"
)

// filesSession is a read-files session for three files of crm.accounts.
func filesSession(files ...string) vend.Session {
	s := session()
	s.Grants = []vend.Grant{{Bucket: "lake", Prefix: "crm/accounts-0a1b/", Access: vend.ReadFiles}}
	s.Files = files
	return s
}

// TestReadFilesExactly: a read-files credential, once resolved from its
// token, reads exactly its files: not another object under the same
// prefix, not one of another prefix or bucket, no listing, no write.
func TestReadFilesExactly(t *testing.T) {
	e := newEmbedded(t, &memKeys{}, fakeclock.New(t0), 0)
	allowed := []string{"crm/accounts-0a1b/data/region=EU/a.parquet", "crm/accounts-0a1b/data/region=EU/b.parquet",
		"crm/accounts-0a1b/data/region=EU/a-deletes.parquet"}
	c, minted := mint(t, e, filesSession(allowed...), 0)
	res := resolve(t, e, c)
	if len(res.Files) != 0 {
		t.Fatalf("the token carries the file keys in the clear: %q", res.Files)
	}
	for _, s := range []vend.Session{minted, res} {
		for _, k := range allowed {
			if !s.Allows("lake", k, false) {
				t.Errorf("%s not readable", k)
			}
			if s.Allows("lake", k, true) {
				t.Errorf("%s writable", k)
			}
			if s.Allows("other", k, false) {
				t.Errorf("%s readable in another bucket", k)
			}
		}
		for _, k := range []string{"crm/accounts-0a1b/data/region=US/c.parquet", "crm/accounts-0a1b/metadata/00001-x.metadata.json",
			"crm/accounts-0a1b/metadata/snap-1.avro", "crm/accounts-0a1b/data/region=EU/a.parquetx", "crm/accounts-0a1b",
			"crm/accounts-0a1b/", "crm/other-0c/data/region=EU/a.parquet", "crm/accounts-0a1b/data/region=EU/../region=EU/a.parquet"} {
			if s.Allows("lake", k, false) {
				t.Errorf("%s readable", k)
			}
		}
		if s.AllowsList("lake", "crm/accounts-0a1b/") || s.AllowsList("lake", "crm/accounts-0a1b/data/region=EU/") {
			t.Error("a read-files credential lists")
		}
	}
}

// TestReadFilesBound: a credential naming MaxFiles files of long keys under
// a long prefix still fits a session token; one more file is refused, as
// are files without a read-files grant and files outside its prefix.
func TestReadFilesBound(t *testing.T) {
	e := newEmbedded(t, &memKeys{}, fakeclock.New(t0), 0)
	prefix := strings.Repeat("p", 900) + "/"
	var files []string
	for i := range vend.MaxFiles {
		files = append(files, fmt.Sprintf("%sdata/region=EU/%s-%05d.parquet", prefix, strings.Repeat("x", 200), i))
	}
	s := filesSession(files...)
	s.Grants[0].Prefix = prefix
	s.Table = strings.Repeat("t", 200)
	c, _ := mint(t, e, s, 0)
	if len(c.SessionToken) > vend.MaxTokenLen {
		t.Fatalf("token of %d bytes", len(c.SessionToken))
	}
	res := resolve(t, e, c)
	for _, k := range []string{files[0], files[vend.MaxFiles/2], files[vend.MaxFiles-1]} {
		if !res.Allows("lake", k, false) {
			t.Errorf("%s not readable", k)
		}
	}
	if res.Allows("lake", prefix+"data/region=EU/other.parquet", false) {
		t.Error("an unnamed file is readable")
	}
	t.Logf("token of %d bytes for %d files", len(c.SessionToken), vend.MaxFiles)

	for name, s := range map[string]vend.Session{
		"one too many": func() vend.Session {
			s := filesSession(append(files, prefix+"one-more")...)
			s.Grants[0].Prefix = prefix
			return s
		}(),
		"no files":       filesSession(),
		"outside prefix": filesSession("crm/other/a.parquet"),
		"dot segment":    filesSession("crm/accounts-0a1b/../x"),
		"files without read-files grant": func() vend.Session {
			s := session()
			s.Files = []string{"crm/accounts-0a1b/a.parquet"}
			return s
		}(),
	} {
		if _, _, err := e.Mint(t.Context(), s, 0); floe.KindOf(err) != floe.Invalid {
			t.Errorf("%s: Mint = %v, want Invalid", name, err)
		}
	}
}

// TestReadFilesSTSPolicy: STS credentials for named files get a session
// policy with one object ARN per file and no listing; too many files for
// STS's policy size are refused before STS is asked, saying what to use.
func TestReadFilesSTSPolicy(t *testing.T) {
	f := newFakeSTS(t, okAnswer)
	m := newSTS(t, f, nil)
	mint(t, m, filesSession("crm/accounts-0a1b/data/a.parquet", "crm/accounts-0a1b/data/b*.parquet"), 0)
	reqs := f.requests()
	var doc struct {
		Statement []struct {
			Sid      string
			Action   []string
			Resource []string
		}
	}
	if err := json.Unmarshal([]byte(reqs[len(reqs)-1].Get("Policy")), &doc); err != nil {
		t.Fatal(err)
	}
	for _, st := range doc.Statement {
		switch st.Sid {
		case "Read":
			want := `["arn:aws:s3:::lake/crm/accounts-0a1b/data/a.parquet","arn:aws:s3:::lake/crm/accounts-0a1b/data/b${*}.parquet"]`
			if got, _ := json.Marshal(st.Resource); string(got) != want {
				t.Errorf("read resources %s, want %s", got, want)
			}
		case "Location":
		default:
			t.Errorf("unexpected statement %+v", st)
		}
	}
	before := len(f.requests())
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("crm/accounts-0a1b/data/%05d.parquet", i))
	}
	_, _, err := m.Mint(t.Context(), filesSession(many...), 0)
	if floe.KindOf(err) != floe.Invalid || !strings.Contains(floe.PublicMessage(err), "embedded S3 endpoint or remote signing") {
		t.Fatalf("Mint of 100 files over STS: %v", err)
	}
	if len(f.requests()) != before {
		t.Fatal("STS was asked with a policy too long")
	}
}
