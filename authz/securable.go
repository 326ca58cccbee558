package authz

import (
	"strings"
	"unicode/utf8"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// Kind is the kind of a securable.
type Kind uint8

// The securable kinds.
const (
	// KindWarehouse is a whole warehouse.
	KindWarehouse Kind = iota + 1
	// KindNamespace is a namespace (at any depth).
	KindNamespace
	// KindTable is a table.
	KindTable
	// KindView is a view.
	KindView
)

var kindNames = [...]string{"", "warehouse", "namespace", "table", "view"}

// String returns "warehouse", "namespace", "table" or "view".
func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "unknown"
}

// ParseKind parses a kind name.
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if i > 0 && strings.EqualFold(s, n) {
			return Kind(i), nil
		}
	}
	return 0, floe.E(floe.Invalid, "securable", "unknown securable kind %q (want warehouse, namespace, table or view)", s)
}

// Securable names an object privileges are granted on. Securables are
// referenced by name: Warehouse always, Namespace for namespaces, tables and
// views, Name for tables and views.
type Securable struct {
	Kind      Kind
	Warehouse string
	Namespace catalog.Namespace
	Name      string
}

// Warehouse returns the securable of warehouse wh.
func Warehouse(wh string) Securable { return Securable{Kind: KindWarehouse, Warehouse: wh} }

// NamespaceOf returns the securable of namespace ns in warehouse wh.
func NamespaceOf(wh string, ns catalog.Namespace) Securable {
	return Securable{Kind: KindNamespace, Warehouse: wh, Namespace: ns}
}

// Table returns the securable of table id in warehouse wh.
func Table(wh string, id catalog.Ident) Securable {
	return Securable{Kind: KindTable, Warehouse: wh, Namespace: id.Namespace, Name: id.Name}
}

// View returns the securable of view id in warehouse wh.
func View(wh string, id catalog.Ident) Securable {
	return Securable{Kind: KindView, Warehouse: wh, Namespace: id.Namespace, Name: id.Name}
}

// Path renders the name used in messages: the warehouse name for a
// warehouse, "a.b" for a namespace and "a.b.t" for a table or view.
func (s Securable) Path() string {
	switch s.Kind {
	case KindWarehouse:
		return s.Warehouse
	case KindNamespace:
		return s.Namespace.String()
	}
	return catalog.Ident{Namespace: s.Namespace, Name: s.Name}.String()
}

// String renders s as in messages: `table "crm.accounts"`.
func (s Securable) String() string { return s.Kind.String() + " " + quote(s.Path()) }

// IsData reports whether s is a table or a view.
func (s Securable) IsData() bool { return s.Kind == KindTable || s.Kind == KindView }

// Validate checks that s is well-formed for its kind.
func (s Securable) Validate() error {
	if err := validateName("warehouse", s.Warehouse); err != nil {
		return err
	}
	switch s.Kind {
	case KindWarehouse:
		if len(s.Namespace) > 0 || s.Name != "" {
			return floe.E(floe.Invalid, "securable", "a warehouse securable has no namespace or name")
		}
	case KindNamespace:
		if s.Name != "" {
			return floe.E(floe.Invalid, "securable", "a namespace securable has no name")
		}
		if err := s.Namespace.Validate(); err != nil {
			return err
		}
	case KindTable, KindView:
		if err := (catalog.Ident{Namespace: s.Namespace, Name: s.Name}).Validate(); err != nil {
			return err
		}
	default:
		return floe.E(floe.Invalid, "securable", "unknown securable kind %d", s.Kind)
	}
	return nil
}

// resKey identifies a securable in the policy's maps.
type resKey struct {
	kind Kind
	wh   string
	ns   string
	name string
}

func (s Securable) key() resKey {
	return resKey{kind: s.Kind, wh: s.Warehouse, ns: s.Namespace.Key(), name: s.Name}
}

// nsKey is the key of the namespace with levels ns in warehouse wh.
func nsKey(wh string, ns catalog.Namespace) resKey {
	return resKey{kind: KindNamespace, wh: wh, ns: ns.Key()}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// MaxNameLength is the longest principal, role, tag key or tag value accepted.
const MaxNameLength = 255

// validateName checks a principal, role or warehouse name.
func validateName(what, s string) error {
	switch {
	case s == "":
		return floe.E(floe.Invalid, what, "%s name must not be empty", what)
	case len(s) > MaxNameLength:
		return floe.E(floe.Invalid, what, "%s name is longer than %d bytes", what, MaxNameLength)
	case !utf8.ValidString(s):
		return floe.E(floe.Invalid, what, "%s name is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return floe.E(floe.Invalid, what, "%s name %q contains a control character", what, s)
		}
	}
	return nil
}
