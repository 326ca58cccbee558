package authz

import (
	"strings"

	"github.com/floe-lake/floe"
)

// Privilege is one action a grant allows.
type Privilege uint8

// The privileges, in the order they are listed in messages.
const (
	// Describe allows listing and loading metadata (no data access).
	Describe Privilege = iota
	// Select allows reading data (read-only vended credentials, SQL reads).
	Select
	// Modify allows committing to a table and writing its data, and
	// replacing a view's definition.
	Modify
	// Alter allows changing a namespace's properties (granted on the
	// namespace or, for all its namespaces, on the warehouse).
	Alter
	// CreateNamespace allows creating namespaces inside a warehouse or namespace.
	CreateNamespace
	// CreateTable allows creating or registering tables inside a namespace.
	CreateTable
	// CreateView allows creating views inside a namespace.
	CreateView
	// Drop allows dropping the securable.
	Drop
	// ManageGrants allows granting and revoking privileges on the securable
	// and setting its tags.
	ManageGrants
	// CreateShare allows creating shares of a warehouse's objects (and
	// recipients to grant them to); granted on a warehouse only. The
	// creator owns the share.
	CreateShare

	numPrivileges
)

var privilegeNames = [numPrivileges]string{"DESCRIBE", "SELECT", "MODIFY", "ALTER", "CREATE_NAMESPACE",
	"CREATE_TABLE", "CREATE_VIEW", "DROP", "MANAGE_GRANTS", "CREATE_SHARE"}

// AllPrivileges lists every privilege in order.
func AllPrivileges() []Privilege {
	out := make([]Privilege, numPrivileges)
	for i := range out {
		out[i] = Privilege(i)
	}
	return out
}

// String returns the upper-case name, e.g. "SELECT".
func (p Privilege) String() string {
	if p < numPrivileges {
		return privilegeNames[p]
	}
	return "UNKNOWN"
}

// Valid reports whether p is one of the defined privileges.
func (p Privilege) Valid() bool { return p < numPrivileges }

// ParsePrivilege parses a privilege name, case-insensitively; "-" and " "
// may stand for "_".
func ParsePrivilege(s string) (Privilege, error) {
	n := strings.ToUpper(strings.NewReplacer("-", "_", " ", "_").Replace(strings.TrimSpace(s)))
	for i, name := range privilegeNames {
		if n == name {
			return Privilege(i), nil
		}
	}
	return 0, floe.E(floe.Invalid, "privilege", "unknown privilege %q (want one of %s)", s, strings.Join(privilegeNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (p Privilege) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, floe.E(floe.Invalid, "privilege", "unknown privilege %d", uint8(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Privilege) UnmarshalText(b []byte) error {
	v, err := ParsePrivilege(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Set is a set of privileges.
type Set uint16

// SetOf returns the set holding ps.
func SetOf(ps ...Privilege) Set {
	var s Set
	for _, p := range ps {
		s = s.With(p)
	}
	return s
}

// Has reports whether p is in s.
func (s Set) Has(p Privilege) bool { return p < numPrivileges && s&(1<<p) != 0 }

// With returns s with p added.
func (s Set) With(p Privilege) Set {
	if p >= numPrivileges {
		return s
	}
	return s | 1<<p
}

// Privileges lists the members of s in order.
func (s Set) Privileges() []Privilege {
	var out []Privilege
	for p := range numPrivileges {
		if s.Has(p) {
			out = append(out, p)
		}
	}
	return out
}

// String renders s as "DESCRIBE, SELECT" (empty for the empty set).
func (s Set) String() string {
	var b strings.Builder
	for _, p := range s.Privileges() {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// ownerTable and ownerNamespace are what the creator of a table or view, or
// of a namespace, is granted on it (see Authorizer.GrantOwner).
const (
	ownerTable     = Set(1<<Select | 1<<Modify | 1<<Drop | 1<<ManageGrants)
	ownerNamespace = Set(1<<Alter | 1<<CreateNamespace | 1<<CreateTable | 1<<CreateView | 1<<Drop | 1<<ManageGrants)
)

// tableLevel are the privileges that apply to a table or view.
const tableLevel = Set(1<<Describe | 1<<Select | 1<<Modify | 1<<Drop | 1<<ManageGrants)

// warehouseLevel are the privileges that only make sense on a warehouse.
const warehouseLevel = Set(1 << CreateShare)

// dataLevel are the privileges that only make sense on tables and views.
const dataLevel = Set(1<<Select | 1<<Modify)
