package restcat_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/testkit"
)

// referenceViewBody is a create-view request with the given representations.
func referenceViewBody(name, representations string) string {
	return fmt.Sprintf(`{"name":%q,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"n","required":false,"type":"long"}]},
	 "view-version":{"version-id":1,"timestamp-ms":%d,"schema-id":0,"summary":{"engine-name":"test"},"default-namespace":["ref"],
	 "representations":[%s]},"properties":{}}`, name, time.Now().UnixMilli(), representations)
}

const oneSQL = `{"type":"sql","sql":"select 1 as n","dialect":"spark"}`

// TestRenameOntoExistingReferenceWording: renaming a table or view onto a
// name that is taken answers 409 AlreadyExistsException with the wording of
// Apache Iceberg's reference catalogs, which the RCK checks.
func TestRenameOntoExistingReferenceWording(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["ref"]}`), 200)
	for _, n := range []string{"t1", "t2"} {
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces/ref/tables"), createTableBody(n, "")), 200)
	}
	for _, n := range []string{"v1", "v2"} {
		mustStatus(t, f.Do(t, "POST", f.P("/namespaces/ref/views"), referenceViewBody(n, oneSQL)), 200)
	}
	rename := func(from, to string) string {
		return fmt.Sprintf(`{"source":{"namespace":["ref"],"name":%q},"destination":{"namespace":["ref"],"name":%q}}`, from, to)
	}
	tests := []struct {
		name, route, from, to, want string
	}{
		{"table onto table", "/tables/rename", "t1", "t2", "Table already exists: ref.t2"},
		{"table onto view", "/tables/rename", "t1", "v1", "Cannot rename ref.t1 to ref.v1. View already exists"},
		{"view onto table", "/views/rename", "v1", "t1", "Cannot rename ref.v1 to ref.t1. Table already exists"},
		{"view onto view", "/views/rename", "v1", "v2", "Cannot rename ref.v1 to ref.v2. View already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.Do(t, "POST", f.P(tt.route), rename(tt.from, tt.to))
			wantErr(t, r, 409, "AlreadyExistsException", tt.want)
			if _, msg := errType(t, r); msg != tt.want {
				t.Errorf("message %q, want exactly %q", msg, tt.want)
			}
		})
	}
}

// TestInvalidViewIsIllegalArgument: view metadata that Iceberg's builder
// refuses is a 400 of type IllegalArgumentException (the Java client then
// raises java.lang.IllegalArgumentException, as with the reference), while a
// malformed request stays BadRequestException.
func TestInvalidViewIsIllegalArgument(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["ref"]}`), 200)
	two := oneSQL + `,{"type":"sql","sql":"select 2 as n","dialect":"spark"}`
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/ref/views"), referenceViewBody("dup", two)), 400,
		"IllegalArgumentException", "Cannot add multiple queries for dialect spark")
	mustStatus(t, f.Do(t, "HEAD", f.P("/namespaces/ref/views/dup"), nil), 404)
	// a replace that adds such a version is refused the same way
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces/ref/views"), referenceViewBody("ok", oneSQL)), 200)
	replace := fmt.Sprintf(`{"requirements":[],"updates":[
	 {"action":"add-view-version","view-version":{"version-id":2,"timestamp-ms":%d,"schema-id":0,"summary":{"engine-name":"test"},"default-namespace":["ref"],"representations":[%s]}},
	 {"action":"set-current-view-version","view-version-id":-1}]}`, time.Now().UnixMilli(), two)
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/ref/views/ok"), replace), 400, "IllegalArgumentException", "Cannot add multiple queries for dialect spark")
	wantErr(t, f.Do(t, "POST", f.P("/namespaces/ref/views"), `{"name":`), 400, "BadRequestException", "")
}

// TestHeadNameWithSlash404: HEAD of a table, view or namespace whose name
// holds a "/" answers 404 (no such entity can exist), as the reference does,
// not 400; loading one is still refused.
func TestHeadNameWithSlash404(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["ref"]}`), 200)
	for _, p := range []string{"/namespaces/ref/tables/a%2Fb", "/namespaces/ref/views/a%2Fb", "/namespaces/a%2Fb"} {
		t.Run(p, func(t *testing.T) {
			r := f.Do(t, "HEAD", f.P(p), nil)
			if r.Status != 404 {
				t.Errorf("HEAD %s: status %d, want 404", p, r.Status)
			}
		})
	}
}

// TestViewRequirementReferenceWording: a failed assert-view-uuid is worded
// as the reference words it.
func TestViewRequirementReferenceWording(t *testing.T) {
	f := testkit.Start(t)
	mustStatus(t, f.Do(t, "POST", f.P("/namespaces"), `{"namespace":["ref"]}`), 200)
	r := f.Do(t, "POST", f.P("/namespaces/ref/views"), referenceViewBody("v", oneSQL))
	mustStatus(t, r, 200)
	var lv struct {
		Metadata struct {
			UUID string `json:"view-uuid"`
		} `json:"metadata"`
	}
	r.JSON(t, &lv)
	const other = "6f9619ff-8b86-d011-b42d-00c04fc964ff"
	body := `{"requirements":[{"type":"assert-view-uuid","uuid":"` + other + `"}],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`
	want := "Requirement failed: view UUID does not match: expected " + lv.Metadata.UUID + " != " + other
	r = f.Do(t, "POST", f.P("/namespaces/ref/views/v"), body)
	wantErr(t, r, 409, "CommitFailedException", want)
	if _, msg := errType(t, r); msg != want {
		t.Errorf("message %q, want exactly %q", msg, want)
	}
}
