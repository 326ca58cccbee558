package catalog

import (
	"strings"
	"unicode/utf8"

	"github.com/floe-lake/floe"
)

// Sep joins namespace levels in keys (the Iceberg REST default separator).
const Sep = "\x1f"

// MaxNameLength is the longest namespace level, table or view name accepted.
const MaxNameLength = 255

// MaxNamespaceDepth is the deepest namespace accepted.
const MaxNamespaceDepth = 16

// Namespace is a multi-level namespace, outermost level first.
type Namespace []string

// String renders the namespace as its levels joined by ".", as Iceberg does in messages.
func (n Namespace) String() string { return strings.Join(n, ".") }

// Key renders the namespace as its levels joined by the unit separator; it is
// the form stored and compared.
func (n Namespace) Key() string { return strings.Join(n, Sep) }

// Parent returns the namespace one level up (nil for a top-level namespace).
func (n Namespace) Parent() Namespace {
	if len(n) <= 1 {
		return nil
	}
	return n[:len(n)-1]
}

// ParseNamespaceKey splits a stored key back into levels.
func ParseNamespaceKey(key string) Namespace {
	if key == "" {
		return nil
	}
	return strings.Split(key, Sep)
}

// Validate checks that every level is a legal name.
func (n Namespace) Validate() error {
	if len(n) == 0 {
		return floe.E(floe.Invalid, "namespace", "namespace must have at least one level")
	}
	if len(n) > MaxNamespaceDepth {
		return floe.E(floe.Invalid, "namespace", "namespace %q is deeper than %d levels", n.String(), MaxNamespaceDepth)
	}
	for _, l := range n {
		if err := validateName("namespace level", l); err != nil {
			return err
		}
	}
	return nil
}

// Ident names a table or view inside a warehouse.
type Ident struct {
	Namespace Namespace
	Name      string
}

// String renders the identifier as "ns.name".
func (i Ident) String() string {
	if len(i.Namespace) == 0 {
		return i.Name
	}
	return i.Namespace.String() + "." + i.Name
}

// Validate checks namespace and name.
func (i Ident) Validate() error {
	if err := i.Namespace.Validate(); err != nil {
		return err
	}
	return validateName("name", i.Name)
}

func validateName(what, s string) error {
	switch {
	case s == "":
		return floe.E(floe.Invalid, "", "%s must not be empty", what)
	case len(s) > MaxNameLength:
		return floe.E(floe.Invalid, "", "%s is longer than %d bytes", what, MaxNameLength)
	case !utf8.ValidString(s):
		return floe.E(floe.Invalid, "", "%s is not valid UTF-8", what)
	case s == "." || s == "..":
		return floe.E(floe.Invalid, "", "%s %q is reserved", what, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return floe.E(floe.Invalid, "", "%s %q contains a forbidden character (control character, '/' or '\\')", what, s)
		}
	}
	return nil
}
