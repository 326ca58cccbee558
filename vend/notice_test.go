package vend_test

import (
	"strings"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/vend"
)

// TestNoticeCredential: a notice credential (vended to a principal that
// may not read a table's files, to carry the reason to the S3 endpoint)
// keeps its notice through sealing and allows nothing, on any key.
func TestNoticeCredential(t *testing.T) {
	e := newEmbedded(t, &memKeys{}, fakeclock.New(t0), 0)
	s := session()
	s.Grants[0].Access = vend.Notice
	s.Notice = `principal "ann" may read table "crm.accounts" only through a data filter; query it through the SQL endpoint at 127.0.0.1:5433`
	c, _ := mint(t, e, s, 0)
	got := resolve(t, e, c)
	if got.Notice != s.Notice || len(got.Grants) != 1 || got.Grants[0].Access != vend.Notice {
		t.Fatalf("resolved %+v, want the notice and its grant", got)
	}
	for _, k := range []string{"crm/accounts-0a1b/data/x.parquet", "crm/accounts-0a1b/metadata/", "crm/accounts-0a1b", "other/x"} {
		for _, w := range []bool{false, true} {
			if got.Allows("lake", k, w) {
				t.Errorf("notice credential allows %q (write %v)", k, w)
			}
		}
	}
	if !got.NoticeCovers("lake", "crm/accounts-0a1b/metadata/snap-1.avro") || got.NoticeCovers("lake", "crm/other/x") ||
		got.NoticeCovers("other", "crm/accounts-0a1b/x") || got.NoticeCovers("lake", "crm/accounts-0a1b/../x") {
		t.Error("NoticeCovers does not follow the grant's bucket and prefix")
	}
	if normal := resolve(t, e, func() vend.Credentials { c, _ := mint(t, e, session(), 0); return c }()); normal.NoticeCovers("lake", "crm/accounts-0a1b/x") {
		t.Error("a normal credential covers notices")
	}
}

// TestNoticeInvalid: a notice grant needs a notice, a notice needs only
// notice grants, and a notice is one line of bounded length.
func TestNoticeInvalid(t *testing.T) {
	e := newEmbedded(t, &memKeys{}, fakeclock.New(t0), 0)
	for _, tt := range []struct {
		name   string
		access vend.Access
		notice string
	}{
		{"notice grant without text", vend.Notice, ""},
		{"text on a read grant", vend.Read, "why"},
		{"multi-line", vend.Notice, "why\r\nx-injected: 1"},
		{"too long", vend.Notice, strings.Repeat("x", vend.MaxNoticeLength+1)},
	} {
		s := session()
		s.Grants[0].Access, s.Notice = tt.access, tt.notice
		if _, _, err := e.Mint(t.Context(), s, 0); floe.KindOf(err) != floe.Invalid {
			t.Errorf("%s: Mint = %v, want Invalid", tt.name, err)
		}
	}
}
