package engine

import "testing"

// TestMissingPrivilege: the privilege a refusal names goes into the
// sql.query event; a refusal that names none adds nothing.
func TestMissingPrivilege(t *testing.T) {
	for _, tt := range []struct{ msg, want string }{
		{`principal "bi" lacks SELECT on table floe.crm.people`, "SELECT"},
		{`principal "bi" lacks MODIFY on table floe.crm.people (it has DESCRIBE, SELECT)`, "MODIFY"},
		{`principal "bi" lacks CREATE_TABLE on namespace floe.crm`, "CREATE_TABLE"},
		{"function read_csv is not allowed", ""},
		{"", ""},
		{"lacks select on x", ""},
	} {
		if got := missingPrivilege(tt.msg); got != tt.want {
			t.Errorf("missingPrivilege(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}
