package engine_test

import (
	"fmt"
	"testing"
)

// TestRenamedColumn: after a column is renamed, files written before and
// after the rename both read right (by field id, not by name).
func TestRenamedColumn(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	tbl = appendPeople(t, tbl, people(2)...)
	c := e.admin(t)
	if rows := mustRows(t, c, "SELECT name FROM crm.people WHERE id = $1", int64(2)); fmt.Sprint(rows) != "[[person-2]]" {
		t.Fatalf("before the rename: %v", rows)
	}
	tbl = renameColumn(t, tbl, "name", "full_name")
	more := people(4)[2:]
	appendPeople(t, tbl, more...)
	rows := mustRows(t, c, "SELECT id, full_name FROM crm.people ORDER BY id")
	if got := fmt.Sprint(rows); got != "[[1 person-1] [2 person-2] [3 person-3] [4 person-4]]" {
		t.Fatalf("after the rename: %s", got)
	}
	if _, err := queryRows(t, c, "SELECT name FROM crm.people"); err == nil {
		t.Fatal("the old column name still reads")
	}
}
