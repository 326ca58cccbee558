package sharing

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// ObjectKind is what a shared object is.
type ObjectKind string

// The kinds of shared objects.
const (
	// ObjectTable is one table.
	ObjectTable ObjectKind = "table"
	// ObjectView is one view.
	ObjectView ObjectKind = "view"
	// ObjectNamespace is every table and view directly inside a namespace,
	// including those created after it was shared.
	ObjectNamespace ObjectKind = "namespace"
	// ObjectProduct is a data product (package products): the tables and
	// views its current version publishes as output ports, following its
	// new versions (an output a version removes leaves the share, one it
	// adds joins it).
	ObjectProduct ObjectKind = "product"
)

// ParseObjectKind parses "table", "view", "namespace" or "product" (any
// case).
func ParseObjectKind(s string) (ObjectKind, error) {
	switch k := ObjectKind(strings.ToLower(strings.TrimSpace(s))); k {
	case ObjectTable, ObjectView, ObjectNamespace, ObjectProduct:
		return k, nil
	}
	return "", floe.E(floe.Invalid, "share object", "unknown object kind %q (want table, view, namespace or product)", s)
}

// ShareInfo is a share as its provider manages it.
type ShareInfo struct {
	ID   string
	Name string
	// Warehouse holds every object of the share; CREATE_SHARE is checked on it.
	Warehouse string
	// Owner is the name of the principal that created the share.
	Owner     string
	Comment   string
	CreatedAt time.Time
}

// Object is one object of a share: a table, a view, a whole namespace or
// a data product, under the names the recipient sees. A product's Name is
// the product's (Namespace is empty); its outputs are seen under their
// own namespace and name, or all in AliasSchema when set.
type Object struct {
	ID      string
	ShareID string
	Kind    ObjectKind
	// Namespace and Name are the object's real name in the share's
	// warehouse (Name is empty for a namespace).
	Namespace catalog.Namespace
	Name      string
	// AliasSchema and AliasName are what the recipient sees instead of the
	// namespace and name (empty: the real ones; AliasName is always empty
	// for a namespace).
	AliasSchema string
	AliasName   string
	// History shares older snapshots (time travel); false serves the
	// current snapshot only.
	History bool
	// PartitionFilter restricts a table to the partitions it admits (see
	// deltasharing.ParseFilter; Options.FilterColumns); empty for none.
	PartitionFilter string
	AddedBy         string
	CreatedAt       time.Time
}

// Schema is the schema (namespace) name the recipient sees.
func (o *Object) Schema() string {
	if o.AliasSchema != "" {
		return o.AliasSchema
	}
	return o.Namespace.String()
}

// VisibleName is the table or view name the recipient sees ("" for a
// namespace object).
func (o *Object) VisibleName() string {
	if o.Kind == ObjectNamespace || o.Kind == ObjectProduct {
		return ""
	}
	if o.AliasName != "" {
		return o.AliasName
	}
	return o.Name
}

// VisibleKey is the case-insensitive key of the names the recipient sees:
// "schema/name" for a table or view, "schema/" for a namespace, and for a
// product "product:name" (its outputs' names change with its versions).
// Two objects of one share never have the same key.
func (o *Object) VisibleKey() string {
	if o.Kind == ObjectProduct {
		return "product:" + strings.ToLower(o.Name)
	}
	return strings.ToLower(o.Schema()) + "/" + strings.ToLower(o.VisibleName())
}

// RecipientInfo is a recipient as its provider manages it (never with a
// token).
type RecipientInfo struct {
	ID   string
	Name string
	// Owner is the name of the principal that created the recipient.
	Owner   string
	Comment string
	// Properties are free-form key/value pairs (e.g. the recipient's
	// organisation); never secret.
	Properties map[string]string
	// AllowedCIDRs is the recipient's network allowlist in canonical form;
	// empty allows any address.
	AllowedCIDRs []string
	// ExpiresAt is when the recipient's tokens stop working (zero: never).
	ExpiresAt time.Time
	CreatedAt time.Time
}

// TokenInfo is one bearer token of a recipient, without the token itself.
type TokenInfo struct {
	// ID is the token's id: audit events and vended credentials carry it
	// (vend.Session.TokenID), and revocation refuses what carries it.
	ID          string
	RecipientID string
	// Hash is the hex SHA-256 of the token (see HashToken).
	Hash      string
	CreatedAt time.Time
	// ExpiresAt is when the token stops working (zero: never). Rotation
	// moves the old token's expiry to the end of the grace period.
	ExpiresAt time.Time
	// RevokedAt is when the token was revoked (zero: not revoked).
	RevokedAt time.Time
}

// Live reports whether the token works at now.
func (t *TokenInfo) Live(now time.Time) bool {
	return t.RevokedAt.IsZero() && (t.ExpiresAt.IsZero() || now.Before(t.ExpiresAt))
}

// GrantInfo says that a share is granted to a recipient.
type GrantInfo struct {
	ShareID     string
	Share       string
	RecipientID string
	Recipient   string
	CreatedBy   string
	CreatedAt   time.Time
}

// Limits bound what the sharing service stores. Zero values mean defaults.
type Limits struct {
	// Shares is the most shares (default DefaultMaxShares).
	Shares int
	// ObjectsPerShare is the most objects of one share (default
	// DefaultMaxObjectsPerShare).
	ObjectsPerShare int
	// Recipients is the most recipients (default DefaultMaxRecipients).
	Recipients int
	// TokensPerRecipient is the most live tokens of one recipient (default
	// DefaultMaxTokensPerRecipient); rotation needs room for one more
	// while the old one's grace runs.
	TokensPerRecipient int
}

// Default limits.
const (
	DefaultMaxShares             = 1000
	DefaultMaxObjectsPerShare    = 1000
	DefaultMaxRecipients         = 10000
	DefaultMaxTokensPerRecipient = 5
)

// withDefaults returns l with zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	if l.Shares <= 0 {
		l.Shares = DefaultMaxShares
	}
	if l.ObjectsPerShare <= 0 {
		l.ObjectsPerShare = DefaultMaxObjectsPerShare
	}
	if l.Recipients <= 0 {
		l.Recipients = DefaultMaxRecipients
	}
	if l.TokensPerRecipient <= 0 {
		l.TokensPerRecipient = DefaultMaxTokensPerRecipient
	}
	return l
}

// Bounds of names and text.
const (
	// MaxNameLength is the longest share, recipient, schema or table name
	// (the Delta Sharing protocol's limit).
	MaxNameLength = 255
	// MaxCommentLength is the longest comment.
	MaxCommentLength = 4096
	// MaxProperties is the most properties of a recipient (the protocol's limit).
	MaxProperties = 50
	// MaxPropertyKeyLength and MaxPropertyValueLength bound one property.
	MaxPropertyKeyLength   = 255
	MaxPropertyValueLength = 1000
)

// ValidateEntityName checks a share or recipient name: 1 to 255 letters,
// digits, '_' and '-', not starting with '-'. Names are compared without
// regard to case, as Delta Sharing clients do.
func ValidateEntityName(what, s string) error {
	if s == "" {
		return floe.E(floe.Invalid, what, "%s name must not be empty", what)
	}
	if len(s) > MaxNameLength {
		return floe.E(floe.Invalid, what, "%s name is longer than %d bytes", what, MaxNameLength)
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' && i > 0
		if !ok {
			return floe.E(floe.Invalid, what, "%s name %q may hold only letters, digits, '_' and '-' (not first)", what, s)
		}
	}
	return nil
}

// ValidateVisibleName checks a schema or table name a recipient sees: the
// Delta Sharing protocol's rules (at most 255 bytes of UTF-8, no space,
// '/', '.', or control character).
func ValidateVisibleName(what, s string) error {
	if s == "" {
		return floe.E(floe.Invalid, "share object", "%s name must not be empty", what)
	}
	if len(s) > MaxNameLength {
		return floe.E(floe.Invalid, "share object", "%s name is longer than %d bytes", what, MaxNameLength)
	}
	if !utf8.ValidString(s) {
		return floe.E(floe.Invalid, "share object", "%s name is not valid UTF-8", what)
	}
	for _, r := range s {
		if r <= 0x20 || r == 0x7f || r == '/' || r == '.' {
			return floe.E(floe.Invalid, "share object",
				"%s name %q has a character recipients cannot use (space, '/', '.' or a control character): give an alias", what, s)
		}
	}
	return nil
}

// validateText checks a comment.
func validateText(what, s string) error {
	if len(s) > MaxCommentLength {
		return floe.E(floe.Invalid, what, "%s comment is longer than %d bytes", what, MaxCommentLength)
	}
	if !utf8.ValidString(s) {
		return floe.E(floe.Invalid, what, "%s comment is not valid UTF-8", what)
	}
	return nil
}

// validateProperties checks a recipient's properties.
func validateProperties(props map[string]string) error {
	if len(props) > MaxProperties {
		return floe.E(floe.Invalid, "recipient", "a recipient has at most %d properties", MaxProperties)
	}
	for k, v := range props {
		if k == "" || len(k) > MaxPropertyKeyLength || !utf8.ValidString(k) {
			return floe.E(floe.Invalid, "recipient", "property key %q must be 1 to %d bytes of UTF-8", k, MaxPropertyKeyLength)
		}
		if len(v) > MaxPropertyValueLength || !utf8.ValidString(v) {
			return floe.E(floe.Invalid, "recipient", "property %q: value must be at most %d bytes of UTF-8", k, MaxPropertyValueLength)
		}
	}
	return nil
}
