// Package sharing owns shares and recipients: named, owned sets of tables,
// views and namespaces that Floe offers to parties outside its own catalog,
// and the recipients (bearer-token holders) those shares are granted to.
//
// The protocol servers (Delta Sharing, the share-scoped Iceberg REST catalog)
// consume this package only through the Resolver interface, so that they stay
// free of storage and management code.
package sharing

import (
	"context"
	"net/netip"
	"time"

	"github.com/floe-lake/floe/catalog"
)

// Recipient is an authenticated party outside Floe's catalog. It is the
// result of Resolver.Authenticate and carries only what protocol servers need
// for authorization and audit; it never carries a secret.
type Recipient struct {
	// ID is the recipient's stable identifier (used in audit events).
	ID string
	// Name is the recipient's unique name.
	Name string
	// TokenID identifies the bearer token that authenticated the request (for
	// audit correlation and revocation); never the token itself.
	TokenID string
	// TokenExpiry is when the presented token stops working (zero: never).
	TokenExpiry time.Time
	// AllowedCIDRs is the recipient's network allowlist (canonical CIDR
	// prefixes; empty: any address). Protocol servers put it into the
	// storage credentials they mint for the recipient, so that Floe's S3
	// endpoint refuses those credentials, and URLs signed with them, from
	// any other address.
	AllowedCIDRs []string
}

// Share is a share as a recipient sees it.
type Share struct {
	// ID is the share's stable identifier.
	ID string
	// Name is the share's unique name.
	Name string
}

// Table is one table a recipient may read through a share, under the names
// the recipient sees (Schema and Name are aliases when the provider set one).
type Table struct {
	// ID is the shared object's stable identifier (stable across alias
	// changes; Delta Sharing's table id).
	ID string
	// Share is the share's name.
	Share string
	// Schema is the schema (namespace) name the recipient sees.
	Schema string
	// Name is the table name the recipient sees.
	Name string
	// Warehouse is the Floe warehouse that holds the table.
	Warehouse string
	// Ident is the table's real identifier in Floe's catalog. Protocol servers
	// must never show it to the recipient.
	Ident catalog.Ident
	// IsView reports that the object is a view rather than a table.
	IsView bool
	// History reports whether time travel (older snapshots) is shared; when
	// false only the current snapshot may be read.
	History bool
	// PartitionFilter is an optional predicate on partition values (SQL-like
	// text as the provider wrote it, already validated when added); when set,
	// nothing outside it may be listed, signed or vended.
	PartitionFilter string
	// Product is set when the table is an output port of a shared data
	// product: the product's name, version and summary (its description,
	// owner and outputs), which share catalogs show as namespace
	// properties.
	Product *ProductRef
}

// ProductRef names the data product a shared table is an output of.
type ProductRef struct {
	Name    string
	Version int
	// Summary is the product's description, version, owner and outputs
	// (as the recipient sees them) in one line, as the catalog's namespace
	// property floe.products.<name> holds it.
	Summary string
}

// Resolver is what protocol servers need from the sharing service. Every
// method is safe for concurrent use.
type Resolver interface {
	// Authenticate checks a recipient bearer token presented from remote. It
	// returns a floe.Unauthenticated error for an unknown, expired or revoked
	// token (or a token whose grace period after rotation ended), and
	// floe.Forbidden when remote is outside the recipient's IP allowlist.
	Authenticate(ctx context.Context, token string, remote netip.Addr) (Recipient, error)
	// Shares lists the shares granted to r, ordered by name.
	Shares(ctx context.Context, r Recipient) ([]Share, error)
	// Tables lists the tables and views of share that r may read, ordered by
	// schema then name; namespace objects are expanded to the tables they
	// hold now. It returns floe.NotFound when the share does not exist or is
	// not granted to r (the two are indistinguishable to the recipient).
	Tables(ctx context.Context, r Recipient, share string) ([]Table, error)
	// Table resolves one shared object by the names the recipient sees, with
	// the same rules as Tables (floe.NotFound for anything not shared to r).
	Table(ctx context.Context, r Recipient, share, schema, name string) (Table, error)
	// Revoked reports whether r's token has been revoked or has expired
	// since it authenticated; servers check it before every URL they issue.
	Revoked(ctx context.Context, r Recipient) (bool, error)
}
