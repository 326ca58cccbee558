package vend_test

import (
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/vend"
)

func TestAccessString(t *testing.T) {
	for _, tt := range []struct {
		a    vend.Access
		want string
	}{
		{vend.Read, "read"},
		{vend.ReadWrite, "read-write"},
		{vend.ReadObjects, "read-objects"},
		{vend.ReadListed, "read-listed"},
		{0, "access(0)"},
		{7, "access(7)"},
	} {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("Access(%d).String() = %q, want %q", uint8(tt.a), got, tt.want)
		}
	}
}

func TestClampTTL(t *testing.T) {
	for _, tt := range []struct{ ttl, want time.Duration }{
		{0, vend.DefaultTTL},
		{-time.Second, vend.DefaultTTL},
		{time.Second, vend.MinTTL},
		{vend.MinTTL, vend.MinTTL},
		{2 * time.Hour, 2 * time.Hour},
		{vend.MaxTTL, vend.MaxTTL},
		{vend.MaxTTL + time.Nanosecond, vend.MaxTTL},
		{30 * 24 * time.Hour, vend.MaxTTL},
	} {
		if got := vend.ClampTTL(tt.ttl); got != tt.want {
			t.Errorf("ClampTTL(%v) = %v, want %v", tt.ttl, got, tt.want)
		}
	}
}

func TestGrantValidate(t *testing.T) {
	ok := vend.Grant{Bucket: "lake", Prefix: "crm/accounts-0a1b/", Access: vend.Read}
	for _, tt := range []struct {
		name string
		edit func(g *vend.Grant)
		ok   bool
	}{
		{"ok", func(g *vend.Grant) {}, true},
		{"read-write", func(g *vend.Grant) { g.Access = vend.ReadWrite }, true},
		{"one segment", func(g *vend.Grant) { g.Prefix = "t/" }, true},
		{"dots inside names", func(g *vend.Grant) { g.Prefix = "a..b/.c/d./" }, true},
		{"wildcards in prefix", func(g *vend.Grant) { g.Prefix = "a*b?c$d/" }, true},
		{"no bucket", func(g *vend.Grant) { g.Bucket = "" }, false},
		{"long bucket", func(g *vend.Grant) { g.Bucket = strings.Repeat("b", 256) }, false},
		{"slash in bucket", func(g *vend.Grant) { g.Bucket = "lake/crm" }, false},
		{"wildcard bucket", func(g *vend.Grant) { g.Bucket = "la*" }, false},
		{"control in bucket", func(g *vend.Grant) { g.Bucket = "la\nke" }, false},
		{"no prefix", func(g *vend.Grant) { g.Prefix = "" }, false},
		{"root prefix", func(g *vend.Grant) { g.Prefix = "/" }, false},
		{"no trailing slash", func(g *vend.Grant) { g.Prefix = "crm/accounts" }, false},
		{"leading slash", func(g *vend.Grant) { g.Prefix = "/crm/accounts/" }, false},
		{"dot-dot segment", func(g *vend.Grant) { g.Prefix = "crm/../other/" }, false},
		{"dot segment", func(g *vend.Grant) { g.Prefix = "crm/./accounts/" }, false},
		{"dot-dot only", func(g *vend.Grant) { g.Prefix = "../" }, false},
		{"control in prefix", func(g *vend.Grant) { g.Prefix = "crm/\x00/" }, false},
		{"long prefix", func(g *vend.Grant) { g.Prefix = strings.Repeat("p", 1024) + "/" }, false},
		{"no access", func(g *vend.Grant) { g.Access = 0 }, false},
		{"unknown access", func(g *vend.Grant) { g.Access = 7 }, false},
		{"read-listed access", func(g *vend.Grant) { g.Access = vend.ReadListed }, true},
		{"notice access", func(g *vend.Grant) { g.Access = vend.Notice }, true},
		{"read-objects access", func(g *vend.Grant) { g.Access = vend.ReadObjects }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := ok
			tt.edit(&g)
			err := g.Validate()
			if tt.ok != (err == nil) {
				t.Fatalf("Validate(%+v) = %v, want ok %v", g, err, tt.ok)
			}
			if err != nil && (floe.KindOf(err) != floe.Invalid || floe.EntityOf(err) != "credential") {
				t.Fatalf("Validate error %v: kind %v entity %q, want invalid credential", err, floe.KindOf(err), floe.EntityOf(err))
			}
		})
	}
}

func TestAllows(t *testing.T) {
	s := vend.Session{Grants: []vend.Grant{
		{Bucket: "lake", Prefix: "crm/accounts-0a1b/", Access: vend.Read},
		{Bucket: "lake", Prefix: "crm/orders-77/", Access: vend.ReadWrite},
		{Bucket: "other", Prefix: "t/", Access: vend.ReadWrite},
		{Bucket: "lake", Prefix: "broken/", Access: 0},
		{Bucket: "lake", Prefix: "shared/now-1/", Access: vend.ReadObjects},
		{Bucket: "lake", Prefix: "crm/view-1/metadata/floe-share-7-ab/", Access: vend.ReadListed},
	}}
	for _, tt := range []struct {
		bucket, key       string
		read, write, list bool // list: the key as a list prefix (write=false, like read)
	}{
		{"lake", "crm/accounts-0a1b/data/00000-0.parquet", true, false, true},
		{"lake", "crm/accounts-0a1b/metadata/v1.metadata.json", true, false, true},
		{"lake", "crm/accounts-0a1b/", true, false, true},
		{"lake", "crm/accounts-0a1b", true, false, true}, // list prefix without the slash
		{"lake", "crm/accounts-0a1", false, false, false},
		{"lake", "crm/accounts-0a1bc/x", false, false, false},
		{"lake", "crm/accounts-0a1b2/", false, false, false},
		{"lake", "crm/", false, false, false},
		{"lake", "crm", false, false, false},
		{"lake", "", false, false, false},
		{"lake", "/crm/accounts-0a1b/x", false, false, false},
		{"lake", "CRM/accounts-0a1b/x", false, false, false},
		{"lake", "crm/orders-77/data/f.parquet", true, true, true},
		{"lake", "crm/orders-77/", true, true, true},
		{"lake", "crm/orders-77", true, false, true}, // listing only: no object of that name
		{"lake", "crm/orders-77/../accounts-0a1b/x", false, false, false},
		{"lake", "crm/orders-77/./x", false, false, false},
		{"lake", "crm/orders-77/a/../../../etc", false, false, false},
		{"lake", "crm/orders-77/..x/y", true, true, true}, // ".." only as a whole segment
		{"lake", "t/x", false, false, false},              // the other bucket's grant
		{"other", "t/x", true, true, true},
		{"other", "crm/orders-77/x", false, false, false},
		{"Lake", "crm/orders-77/x", false, false, false},
		{"", "crm/orders-77/x", false, false, false},
		{"lake", "broken/x", false, false, false}, // invalid access allows nothing
		// read-objects: objects by key, never a listing
		{"lake", "shared/now-1/data/f.parquet", true, false, false},
		{"lake", "shared/now-1/", true, false, false},
		{"lake", "shared/now-1/data/", true, false, false},
		{"lake", "shared/now-1/../x", false, false, false},
		// read-listed: its view directory's objects by key (the files the
		// view names are the S3 endpoint's question), never a listing
		{"lake", "crm/view-1/metadata/floe-share-7-ab/list.avro", true, false, false},
		{"lake", "crm/view-1/metadata/floe-share-7-ab/", true, false, false},
		{"lake", "crm/view-1/data/f.parquet", false, false, false},
		{"lake", "crm/view-1/metadata/floe-share-7-ab/../../v1.metadata.json", false, false, false},
	} {
		if got := s.Allows(tt.bucket, tt.key, false); got != (tt.read || tt.list) {
			t.Errorf("Allows(%q, %q, read) = %v, want %v", tt.bucket, tt.key, got, tt.read || tt.list)
		}
		if got := s.AllowsList(tt.bucket, tt.key); got != tt.list {
			t.Errorf("AllowsList(%q, %q) = %v, want %v", tt.bucket, tt.key, got, tt.list)
		}
		if got := s.Allows(tt.bucket, tt.key, true); got != tt.write {
			t.Errorf("Allows(%q, %q, write) = %v, want %v", tt.bucket, tt.key, got, tt.write)
		}
	}
	if (vend.Session{}).Allows("lake", "crm/accounts-0a1b/x", false) {
		t.Error("a session without grants allows a read")
	}
	empty := vend.Session{Grants: []vend.Grant{{Bucket: "lake", Prefix: "", Access: vend.ReadWrite}}}
	if empty.Allows("lake", "anything", true) || empty.Allows("lake", "", false) {
		t.Error("a grant with an empty prefix allows access")
	}
}

// TestListedViews: the S3 endpoint asks about the views of a session's
// read-listed grants in the request's bucket only.
func TestListedViews(t *testing.T) {
	s := vend.Session{Grants: []vend.Grant{
		{Bucket: "lake", Prefix: "a/metadata/floe-share-1-x/", Access: vend.ReadListed},
		{Bucket: "lake", Prefix: "b/", Access: vend.Read},
		{Bucket: "other", Prefix: "c/metadata/floe-share-2-y/", Access: vend.ReadListed},
	}}
	if got := s.ListedViews("lake"); len(got) != 1 || got[0] != "a/metadata/floe-share-1-x/" {
		t.Fatalf("ListedViews(lake) = %v", got)
	}
	if got := s.ListedViews("nope"); len(got) != 0 {
		t.Fatalf("ListedViews(nope) = %v", got)
	}
}
