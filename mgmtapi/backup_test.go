package mgmtapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/floe-lake/floe/store/backup"
)

// TestAdminBackup: an administrator downloads a backup that reads back
// whole (the table just created is in it); anyone else is refused; both
// are audited as mgmt.backup.
func TestAdminBackup(t *testing.T) {
	e := newEnv(t)
	f := e.f
	f.CreateTable(t, "bk", "t1")
	bob := f.PrincipalToken(t, "bob")
	r := e.do(t, bob, "GET", "/api/v1/admin/backup", nil)
	if r.Status != 403 {
		t.Fatalf("non-admin backup: %d %s", r.Status, r.Body)
	}
	r = e.ok(t, 200, "GET", "/api/v1/admin/backup", nil)
	if ct := r.Header.Get("Content-Type"); ct != "application/gzip" {
		t.Fatalf("content type %q", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.Contains(cd, `.backup"`) {
		t.Fatalf("content disposition %q", cd)
	}
	rd, err := backup.NewReader(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for {
		tb, err := rd.NextTable()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the downloaded backup does not read: %v", err)
		}
		for tb.Name == "entities" {
			row, err := rd.NextRow()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if row[2] == "t1" {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("the backup lacks table bk.t1")
	}
	tr, _ := rd.Trailer()
	recs, err := f.App.Store().AuditRecords(context.Background(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, rec := range recs {
		if rec.Action == "mgmt.backup" {
			outcomes = append(outcomes, rec.Principal+":"+rec.Outcome)
			if rec.Outcome == "success" && !strings.Contains(string(rec.Detail), tr.SHA256) {
				t.Errorf("the success event lacks the file's sha256: %s", rec.Detail)
			}
		}
	}
	if strings.Join(outcomes, ",") != "bob:denied,admin:success" {
		t.Fatalf("mgmt.backup events %v", outcomes)
	}
}
