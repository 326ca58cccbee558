package sharing

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/netallow"
	"github.com/floe-lake/floe/revoke"
)

var _ Resolver = (*Service)(nil)

// Catalog is what the service reads of the catalog (*catalog.Catalog).
type Catalog interface {
	Warehouse(ctx context.Context, name string) (catalog.Warehouse, error)
	LoadNamespace(ctx context.Context, wh string, ns catalog.Namespace) (map[string]string, error)
	Exists(ctx context.Context, wh string, id catalog.Ident, kind catalog.Kind) (bool, error)
	List(ctx context.Context, wh string, ns catalog.Namespace, kind catalog.Kind, after string, limit int) ([]string, error)
	LoadTable(ctx context.Context, wh string, id catalog.Ident) (*catalog.TableState, error)
}

// Authorizer gives the current authorization policy (*authz.Authorizer).
type Authorizer interface {
	Policy(ctx context.Context) (*authz.Policy, error)
}

// Revocations is this node's revocation state (*revoke.List): Revoked
// asks it whether a token was revoked, without I/O.
type Revocations interface {
	Session(tokenID, principal string, since int64) error
}

// Products resolves data products for shares (package products).
type Products interface {
	// Product returns the current version of product name of warehouse
	// wh; floe.NotFound when there is none.
	Product(ctx context.Context, wh, name string) (SharedProduct, error)
}

// SharedProduct is what a share needs of a data product's current
// version.
type SharedProduct struct {
	Name        string
	Version     int
	Description string
	Owner       string
	Outputs     []ProductOutput
}

// ProductOutput is one output port of a data product.
type ProductOutput struct {
	Ident  catalog.Ident
	IsView bool
}

// DefaultRotationGrace is how long the old token keeps working after a
// rotation when the caller gives no grace period.
const DefaultRotationGrace = time.Hour

// MaxNamespaceTables bounds how many tables and views one shared namespace
// contributes to a listing.
const MaxNamespaceTables = 10000

// Options configures a Service. Store, Catalog and Authz are required.
type Options struct {
	Store   Store
	Catalog Catalog
	Authz   Authorizer
	// Revocations, when set, answers Revoked from memory; nil reads the
	// token from the store.
	Revocations Revocations
	// Products resolves the data products shares hold; nil refuses
	// objects of kind product.
	Products Products
	// Limits bound shares, objects, recipients and tokens.
	Limits Limits
	// DefaultWarehouse is the warehouse of a share created without one.
	DefaultWarehouse string
	// Audit records the events of recipients' requests (RecordRequest);
	// nil records nothing.
	Audit func(ctx context.Context, e audit.Event)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// FilterColumns parses a partition filter and returns the columns it
	// names (lower case). It is the parser of the protocol server that
	// enforces filters (deltasharing.FilterColumns), so that the service
	// never accepts a filter the server reads otherwise. Nil: objects with
	// a partition filter are refused.
	FilterColumns func(string) ([]string, error)
}

// MaxPartitionFilterLength is the longest partition filter, in bytes.
const MaxPartitionFilterLength = 4096

// Service is the sharing service: it manages shares, objects, recipients,
// tokens and grants with the authorization rules of Floe, and resolves
// recipients' requests for the protocol servers (Resolver). It is safe for
// concurrent use.
type Service struct {
	store      Store
	cat        Catalog
	authz      Authorizer
	revs       Revocations
	products   Products
	limits     Limits
	defWH      string
	audit      func(ctx context.Context, e audit.Event)
	now        func() time.Time
	log        *slog.Logger
	filterCols func(string) ([]string, error)
}

// New returns a Service.
func New(opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: opts.Store, cat: opts.Catalog, authz: opts.Authz, revs: opts.Revocations, products: opts.Products,
		limits: opts.Limits.withDefaults(), defWH: opts.DefaultWarehouse, audit: opts.Audit, now: opts.Now, log: opts.Logger,
		filterCols: opts.FilterColumns}
}

// RecordRequest records the audit event of a recipient's request (see
// RecipientEvent): protocol servers call it for every request, URL
// issuance, credential vend and read.
func (s *Service) RecordRequest(ctx context.Context, r Recipient, e RequestEvent) {
	if s.audit != nil {
		s.audit(ctx, RecipientEvent(r, e))
	}
}

// Limits returns the limits in force.
func (s *Service) Limits() Limits { return s.limits }

// check checks sub's privilege priv on sec.
func (s *Service) check(ctx context.Context, sub authz.Subject, priv authz.Privilege, sec authz.Securable) error {
	if sub.Admin {
		return nil
	}
	p, err := s.authz.Policy(ctx)
	if err != nil {
		return err
	}
	return p.Check(sub, priv, sec)
}

// owns checks that sub owns (or, as an administrator, may manage) what
// belongs to owner; what names it in the message.
func owns(sub authz.Subject, owner, what string) error {
	if sub.Admin || sub.Principal != "" && sub.Principal == owner {
		return nil
	}
	return floe.E(floe.Forbidden, "privilege", "%s does not own %s (owner %q): only its owner or an administrator may change it", sub, what, owner)
}

// CreateShare creates a share of warehouse wh (the default warehouse when
// empty) owned by sub: it needs CREATE_SHARE on the warehouse.
func (s *Service) CreateShare(ctx context.Context, sub authz.Subject, name, wh, comment string) (ShareInfo, error) {
	if err := ValidateEntityName("share", name); err != nil {
		return ShareInfo{}, err
	}
	if err := validateText("share", comment); err != nil {
		return ShareInfo{}, err
	}
	if wh == "" {
		wh = s.defWH
	}
	if err := s.check(ctx, sub, authz.CreateShare, authz.Warehouse(wh)); err != nil {
		return ShareInfo{}, err
	}
	if _, err := s.cat.Warehouse(ctx, wh); err != nil {
		return ShareInfo{}, err
	}
	sh := ShareInfo{ID: uuid.NewString(), Name: name, Warehouse: wh, Owner: sub.Principal, Comment: comment, CreatedAt: s.now().UTC()}
	if err := s.store.CreateShare(ctx, sh, s.limits.Shares); err != nil {
		return ShareInfo{}, err
	}
	return sh, nil
}

// ShareDetail is a share with its objects and grants.
type ShareDetail struct {
	ShareInfo
	Objects []Object
	Grants  []GrantInfo
}

// ownedShare returns the share named name if sub may manage it.
func (s *Service) ownedShare(ctx context.Context, sub authz.Subject, name string) (ShareInfo, error) {
	sh, err := s.store.ShareByName(ctx, name)
	if err != nil {
		return ShareInfo{}, err
	}
	if err := owns(sub, sh.Owner, "share "+quote(sh.Name)); err != nil {
		return ShareInfo{}, err
	}
	return sh, nil
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// Share returns a share with its objects and grants, to its owner or an
// administrator.
func (s *Service) Share(ctx context.Context, sub authz.Subject, name string) (ShareDetail, error) {
	sh, err := s.ownedShare(ctx, sub, name)
	if err != nil {
		return ShareDetail{}, err
	}
	objs, err := s.store.ShareObjects(ctx, sh.ID)
	if err != nil {
		return ShareDetail{}, err
	}
	gs, err := s.store.ShareGrants(ctx, sh.Name, "")
	if err != nil {
		return ShareDetail{}, err
	}
	return ShareDetail{ShareInfo: sh, Objects: objs, Grants: gs}, nil
}

// ListShares lists the shares sub owns (every share for an administrator).
func (s *Service) ListShares(ctx context.Context, sub authz.Subject) ([]ShareInfo, error) {
	all, err := s.store.ListShares(ctx)
	if err != nil {
		return nil, err
	}
	if sub.Admin {
		return all, nil
	}
	return slices.DeleteFunc(all, func(sh ShareInfo) bool { return sh.Owner != sub.Principal }), nil
}

// DropShare drops a share, its objects and its grants; what recipients
// were vended for it stops working.
func (s *Service) DropShare(ctx context.Context, sub authz.Subject, name string) error {
	sh, err := s.ownedShare(ctx, sub, name)
	if err != nil {
		return err
	}
	names, err := s.granteeNames(ctx, sh.Name)
	if err != nil {
		return err
	}
	return s.store.DropShare(ctx, sh.ID, names)
}

// granteeNames returns the credential principals of the recipients a share
// is granted to.
func (s *Service) granteeNames(ctx context.Context, share string) ([]string, error) {
	gs, err := s.store.ShareGrants(ctx, share, "")
	if err != nil {
		return nil, err
	}
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = CredentialPrincipal(g.Recipient)
	}
	return out, nil
}

// ObjectSpec is what AddObject adds to a share.
type ObjectSpec struct {
	Kind ObjectKind
	// Name is the object's name in the share's warehouse: "ns.table" (or
	// "a.b.table") for a table or view, "ns" (or "a.b") for a namespace,
	// the product's name for a product.
	Name string
	// AliasSchema and AliasName are what recipients see instead (optional).
	AliasSchema, AliasName string
	// History shares older snapshots (time travel).
	History bool
	// PartitionFilter restricts a table to some partitions (see
	// PartitionFilter); tables only.
	PartitionFilter string
}

// AddObject adds an object to a share. sub must own the share (or be an
// administrator) and be able to grant SELECT on the object (MANAGE_GRANTS
// on it; for a product, on each of its current outputs); a partition
// filter must parse and name only the table's partition columns.
func (s *Service) AddObject(ctx context.Context, sub authz.Subject, share string, spec ObjectSpec) (Object, error) {
	sh, err := s.ownedShare(ctx, sub, share)
	if err != nil {
		return Object{}, err
	}
	o := Object{ID: uuid.NewString(), ShareID: sh.ID, Kind: spec.Kind, AliasSchema: strings.TrimSpace(spec.AliasSchema),
		AliasName: strings.TrimSpace(spec.AliasName), History: spec.History, PartitionFilter: strings.TrimSpace(spec.PartitionFilter),
		AddedBy: sub.Principal, CreatedAt: s.now().UTC()}
	levels := splitName(spec.Name)
	var sec authz.Securable
	switch spec.Kind {
	case ObjectNamespace:
		o.Namespace = levels
		if err := o.Namespace.Validate(); err != nil {
			return Object{}, err
		}
		if o.AliasName != "" {
			return Object{}, floe.E(floe.Invalid, "share object", "a namespace takes a schema alias only, not a table alias")
		}
		if o.PartitionFilter != "" {
			return Object{}, floe.E(floe.Invalid, "share object", "a partition filter applies to one table, not to a namespace")
		}
		sec = authz.NamespaceOf(sh.Warehouse, o.Namespace)
	case ObjectTable, ObjectView:
		if len(levels) < 2 {
			return Object{}, floe.E(floe.Invalid, "share object", "a %s is named namespace.name, e.g. crm.accounts (got %q)", spec.Kind, spec.Name)
		}
		id := catalog.Ident{Namespace: levels[:len(levels)-1], Name: levels[len(levels)-1]}
		if err := id.Validate(); err != nil {
			return Object{}, err
		}
		o.Namespace, o.Name = id.Namespace, id.Name
		sec = authz.Table(sh.Warehouse, id)
		if spec.Kind == ObjectView {
			sec = authz.View(sh.Warehouse, id)
			if o.PartitionFilter != "" {
				return Object{}, floe.E(floe.Invalid, "share object", "a partition filter applies to a table, not to a view")
			}
		}
	case ObjectProduct:
		if err := s.productObject(ctx, sub, sh, &o, spec.Name); err != nil {
			return Object{}, err
		}
	default:
		return Object{}, floe.E(floe.Invalid, "share object", "unknown object kind %q (want table, view, namespace or product)", spec.Kind)
	}
	if o.Kind != ObjectProduct { // a product's outputs are checked above
		if err := s.checkGrantSelect(ctx, sub, sec); err != nil {
			return Object{}, err
		}
		if err := s.objectExists(ctx, sh.Warehouse, &o); err != nil {
			return Object{}, err
		}
	}
	if o.Kind != ObjectProduct || o.AliasSchema != "" {
		if err := ValidateVisibleName("schema", o.Schema()); err != nil {
			return Object{}, err
		}
	}
	if o.Kind != ObjectNamespace && o.Kind != ObjectProduct {
		if err := ValidateVisibleName("table", o.VisibleName()); err != nil {
			return Object{}, err
		}
	}
	if o.PartitionFilter != "" {
		if err := s.checkPartitionFilter(ctx, sh.Warehouse, &o); err != nil {
			return Object{}, err
		}
	}
	objs, err := s.store.ShareObjects(ctx, sh.ID)
	if err != nil {
		return Object{}, err
	}
	for i := range objs {
		if err := conflicts(&objs[i], &o); err != nil {
			return Object{}, err
		}
	}
	if err := s.store.AddShareObject(ctx, o, s.limits.ObjectsPerShare); err != nil {
		return Object{}, err
	}
	return o, nil
}

// productObject fills in a product object: the product must exist, and
// sub must be able to grant SELECT on each of its current outputs.
func (s *Service) productObject(ctx context.Context, sub authz.Subject, sh ShareInfo, o *Object, name string) error {
	if s.products == nil {
		return floe.E(floe.Unsupported, "share object", "data products cannot be shared on this server")
	}
	o.Name = strings.TrimSpace(name)
	if o.Name == "" || strings.Contains(o.Name, ".") {
		return floe.E(floe.Invalid, "share object", "a product is named by its name alone, e.g. sales_pipeline (got %q)", name)
	}
	if o.AliasName != "" {
		return floe.E(floe.Invalid, "share object", "a product takes a schema alias only (where its outputs are seen), not a table alias")
	}
	if o.PartitionFilter != "" {
		return floe.E(floe.Invalid, "share object", "a partition filter applies to one table, not to a product")
	}
	p, err := s.products.Product(ctx, sh.Warehouse, o.Name)
	if err != nil {
		return err
	}
	for _, out := range p.Outputs {
		sec := authz.Table(sh.Warehouse, out.Ident)
		if out.IsView {
			sec = authz.View(sh.Warehouse, out.Ident)
		}
		if err := s.checkGrantSelect(ctx, sub, sec); err != nil {
			return err
		}
	}
	return nil
}

// productTables are the tables and views a product object shares now:
// the current version's outputs that exist, under their own names (or in
// the object's schema alias). A product dropped since shares nothing.
func (s *Service) productTables(ctx context.Context, sh ShareInfo, o *Object) ([]Table, error) {
	if s.products == nil {
		return nil, nil
	}
	p, err := s.products.Product(ctx, sh.Warehouse, o.Name)
	if floe.KindOf(err) == floe.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ref := &ProductRef{Name: p.Name, Version: p.Version}
	var out []Table
	for _, po := range p.Outputs {
		kind := catalog.KindTable
		if po.IsView {
			kind = catalog.KindView
		}
		ok, err := s.cat.Exists(ctx, sh.Warehouse, po.Ident, kind)
		if err != nil && floe.KindOf(err) != floe.NotFound {
			return nil, err
		}
		schema := o.AliasSchema
		if schema == "" {
			schema = po.Ident.Namespace.String()
		}
		if !ok || ValidateVisibleName("schema", schema) != nil || ValidateVisibleName("table", po.Ident.Name) != nil {
			continue // dropped since, or a name recipients cannot address
		}
		out = append(out, Table{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(o.ID+"/"+po.Ident.String())).String(), Share: sh.Name,
			Schema: schema, Name: po.Ident.Name, Warehouse: sh.Warehouse, Ident: po.Ident, IsView: po.IsView,
			History: o.History, Product: ref})
	}
	// The summary names the outputs as the recipient sees them, never
	// their real names.
	names := make([]string, len(out))
	for i, t := range out {
		names[i] = t.Schema + "." + t.Name
	}
	ref.Summary = fmt.Sprintf("version %d, owner %s, outputs %s", p.Version, p.Owner, strings.Join(names, ", "))
	if p.Description != "" {
		ref.Summary = p.Description + " (" + ref.Summary + ")"
	}
	return out, nil
}

// tableKey is the case-insensitive key of a shared table's visible names.
func tableKey(t *Table) string { return strings.ToLower(t.Schema) + "/" + strings.ToLower(t.Name) }

// checkGrantSelect checks that sub may grant SELECT on sec.
func (s *Service) checkGrantSelect(ctx context.Context, sub authz.Subject, sec authz.Securable) error {
	if sub.Admin {
		return nil
	}
	p, err := s.authz.Policy(ctx)
	if err != nil {
		return err
	}
	all := sec.Kind == authz.KindNamespace
	if err := p.CheckGrantAdmin(sub, &authz.Grant{Privilege: authz.Select, On: sec, AllTables: all}); err != nil {
		return floe.E(floe.Forbidden, "privilege", "%s: sharing %s requires the right to grant SELECT on it", floe.PublicMessage(err), sec)
	}
	return nil
}

// objectExists checks that the object exists in wh.
func (s *Service) objectExists(ctx context.Context, wh string, o *Object) error {
	if o.Kind == ObjectNamespace {
		_, err := s.cat.LoadNamespace(ctx, wh, o.Namespace)
		return err
	}
	kind := catalog.KindTable
	if o.Kind == ObjectView {
		kind = catalog.KindView
	}
	ok, err := s.cat.Exists(ctx, wh, catalog.Ident{Namespace: o.Namespace, Name: o.Name}, kind)
	if err != nil {
		return err
	}
	if !ok {
		return floe.E(floe.NotFound, string(o.Kind), "%s %q does not exist in warehouse %q", o.Kind,
			catalog.Ident{Namespace: o.Namespace, Name: o.Name}.String(), wh)
	}
	return nil
}

// checkPartitionFilter parses o's partition filter and checks that it names
// only partition columns of the table: partition field names, or source
// columns of identity partitions (case-insensitively, as it is enforced).
func (s *Service) checkPartitionFilter(ctx context.Context, wh string, o *Object) error {
	id := catalog.Ident{Namespace: o.Namespace, Name: o.Name}
	if s.filterCols == nil {
		return floe.E(floe.Unsupported, "partition filter", "this server has no protocol server that enforces partition filters")
	}
	if len(o.PartitionFilter) > MaxPartitionFilterLength || !utf8.ValidString(o.PartitionFilter) {
		return floe.E(floe.Invalid, "partition filter", "partition filter must be valid UTF-8 of at most %d bytes", MaxPartitionFilterLength)
	}
	named, err := s.filterCols(o.PartitionFilter)
	if err != nil {
		return floe.E(floe.Invalid, "partition filter", "partition filter: %v", err)
	}
	st, err := s.cat.LoadTable(ctx, wh, id)
	if err != nil {
		return err
	}
	cols := PartitionColumns(st)
	if len(cols) == 0 {
		return floe.E(floe.Invalid, "partition filter", "table %q is not partitioned: a partition filter needs partition columns", id.String())
	}
	for _, c := range named {
		if !slices.ContainsFunc(cols, func(p string) bool { return strings.EqualFold(p, c) }) {
			return floe.E(floe.Invalid, "partition filter", "partition filter names %q, which is not a partition column of %q (its partition columns: %s)",
				c, id.String(), strings.Join(cols, ", "))
		}
	}
	return nil
}

// PartitionColumns returns the names a partition filter of a table may use:
// the names of its current spec's partition fields and the source columns
// of its identity partitions, sorted.
func PartitionColumns(st *catalog.TableState) []string {
	md := st.Metadata
	spec := md.PartitionSpec()
	sch := md.CurrentSchema()
	var out []string
	for _, f := range spec.Fields() {
		out = append(out, f.Name)
		if _, ok := f.Transform.(iceberg.IdentityTransform); ok {
			if n, ok := sch.FindColumnName(f.SourceID()); ok {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// conflicts reports whether the new object b clashes with a's names.
func conflicts(a, b *Object) error {
	if a.Kind == b.Kind && slices.Equal(a.Namespace, b.Namespace) && a.Name == b.Name {
		return floe.E(floe.AlreadyExists, "share object", "the share holds %s %q already", a.Kind, a.realName())
	}
	if a.VisibleKey() == b.VisibleKey() {
		return floe.E(floe.AlreadyExists, "share object", "the share shows another object as %q already: give an alias", b.visible())
	}
	if (a.Kind == ObjectNamespace) != (b.Kind == ObjectNamespace) && strings.EqualFold(a.Schema(), b.Schema()) {
		return floe.E(floe.AlreadyExists, "share object", "schema %q of the share is a shared namespace and cannot also hold single tables: give an alias", b.Schema())
	}
	return nil
}

func (o *Object) realName() string {
	if o.Kind == ObjectProduct {
		return o.Name
	}
	if o.Kind == ObjectNamespace {
		return o.Namespace.String()
	}
	return catalog.Ident{Namespace: o.Namespace, Name: o.Name}.String()
}

// visible is the name the recipient sees: "schema.name", or "schema"; a
// product's name for a product.
func (o *Object) visible() string {
	if o.Kind == ObjectProduct {
		return o.Name
	}
	if o.Kind == ObjectNamespace {
		return o.Schema()
	}
	return o.Schema() + "." + o.VisibleName()
}

// splitName splits "a.b.c" into levels.
func splitName(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

// RemoveObject removes an object from a share; ref is its id or the name
// the recipient sees ("schema.name", or "schema" for a namespace).
func (s *Service) RemoveObject(ctx context.Context, sub authz.Subject, share, ref string) (Object, error) {
	sh, err := s.ownedShare(ctx, sub, share)
	if err != nil {
		return Object{}, err
	}
	objs, err := s.store.ShareObjects(ctx, sh.ID)
	if err != nil {
		return Object{}, err
	}
	i := slices.IndexFunc(objs, func(o Object) bool { return o.ID == ref || strings.EqualFold(o.visible(), ref) })
	if i < 0 {
		return Object{}, floe.E(floe.NotFound, "share object", "share %q has no object %q", sh.Name, ref)
	}
	names, err := s.granteeNames(ctx, sh.Name)
	if err != nil {
		return Object{}, err
	}
	return objs[i], s.store.RemoveShareObject(ctx, sh.ID, objs[i].ID, names)
}

// RecipientSpec is what CreateRecipient creates.
type RecipientSpec struct {
	Name       string
	Comment    string
	Properties map[string]string
	// AllowedCIDRs is the network allowlist (CIDR prefixes or addresses);
	// empty allows any address.
	AllowedCIDRs []string
	// ExpiresAt is when the recipient's tokens stop working (zero: never).
	ExpiresAt time.Time
}

// checkRecipientAdmin checks that sub may create recipients: an
// administrator, or CREATE_SHARE on the default warehouse.
func (s *Service) checkRecipientAdmin(ctx context.Context, sub authz.Subject) error {
	return s.check(ctx, sub, authz.CreateShare, authz.Warehouse(s.defWH))
}

// CreateRecipient creates a recipient owned by sub (who needs CREATE_SHARE
// on the default warehouse) with its first bearer token, returned only now.
func (s *Service) CreateRecipient(ctx context.Context, sub authz.Subject, spec RecipientSpec) (RecipientInfo, Credential, error) {
	if err := ValidateEntityName("recipient", spec.Name); err != nil {
		return RecipientInfo{}, Credential{}, err
	}
	if err := validateText("recipient", spec.Comment); err != nil {
		return RecipientInfo{}, Credential{}, err
	}
	if err := validateProperties(spec.Properties); err != nil {
		return RecipientInfo{}, Credential{}, err
	}
	cidrs, err := netallow.Canonical(spec.AllowedCIDRs)
	if err != nil {
		return RecipientInfo{}, Credential{}, err
	}
	now := s.now().UTC()
	if !spec.ExpiresAt.IsZero() && !spec.ExpiresAt.After(now) {
		return RecipientInfo{}, Credential{}, floe.E(floe.Invalid, "recipient", "the recipient's expiry %s is in the past", spec.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if err := s.checkRecipientAdmin(ctx, sub); err != nil {
		return RecipientInfo{}, Credential{}, err
	}
	r := RecipientInfo{ID: uuid.NewString(), Name: spec.Name, Owner: sub.Principal, Comment: spec.Comment, Properties: spec.Properties,
		AllowedCIDRs: cidrs, ExpiresAt: spec.ExpiresAt.UTC(), CreatedAt: now}
	if spec.ExpiresAt.IsZero() {
		r.ExpiresAt = time.Time{}
	}
	cred, t := s.mint(r, now)
	if err := s.store.CreateRecipient(ctx, r, t, s.limits.Recipients); err != nil {
		return RecipientInfo{}, Credential{}, err
	}
	return r, cred, nil
}

// mint makes a new token of r.
func (s *Service) mint(r RecipientInfo, now time.Time) (Credential, TokenInfo) {
	tok := newToken()
	t := TokenInfo{ID: newID("rt_"), RecipientID: r.ID, Hash: HashToken(tok), CreatedAt: now, ExpiresAt: r.ExpiresAt}
	return Credential{Token: tok, TokenID: t.ID, ExpiresAt: t.ExpiresAt}, t
}

// ownedRecipient returns the recipient named name if sub may manage it.
func (s *Service) ownedRecipient(ctx context.Context, sub authz.Subject, name string) (RecipientInfo, error) {
	r, err := s.store.RecipientByName(ctx, name)
	if err != nil {
		return RecipientInfo{}, err
	}
	if err := owns(sub, r.Owner, "recipient "+quote(r.Name)); err != nil {
		return RecipientInfo{}, err
	}
	return r, nil
}

// RotateToken gives a recipient a new token, returned only now. The old
// tokens keep working for grace (a negative grace means
// DefaultRotationGrace; zero revokes them at once, reaching the
// credentials vended under them).
func (s *Service) RotateToken(ctx context.Context, sub authz.Subject, name string, grace time.Duration) (Credential, error) {
	r, err := s.ownedRecipient(ctx, sub, name)
	if err != nil {
		return Credential{}, err
	}
	if grace < 0 {
		grace = DefaultRotationGrace
	}
	now := s.now().UTC()
	if !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) {
		return Credential{}, floe.E(floe.Invalid, "recipient", "recipient %q expired at %s: a new token would not work", r.Name, r.ExpiresAt.Format(time.RFC3339))
	}
	cred, t := s.mint(r, now)
	if err := s.store.RotateToken(ctx, t, now.Add(grace), s.limits.TokensPerRecipient); err != nil {
		return Credential{}, err
	}
	return cred, nil
}

// RevokeTokens revokes a recipient's tokens (only tokenID when not empty)
// at once: requests with them fail, and the credentials and pre-signed
// URLs vended under them stop working on every node within a second.
func (s *Service) RevokeTokens(ctx context.Context, sub authz.Subject, name, tokenID string) ([]string, error) {
	r, err := s.ownedRecipient(ctx, sub, name)
	if err != nil {
		return nil, err
	}
	return s.store.RevokeTokens(ctx, r.ID, tokenID)
}

// RecipientDetail is a recipient with its tokens (never the tokens
// themselves) and the shares granted to it.
type RecipientDetail struct {
	RecipientInfo
	Tokens []TokenInfo
	Grants []GrantInfo
}

// Recipient returns a recipient, to its owner or an administrator.
func (s *Service) Recipient(ctx context.Context, sub authz.Subject, name string) (RecipientDetail, error) {
	r, err := s.ownedRecipient(ctx, sub, name)
	if err != nil {
		return RecipientDetail{}, err
	}
	ts, err := s.store.RecipientTokens(ctx, r.ID)
	if err != nil {
		return RecipientDetail{}, err
	}
	gs, err := s.store.ShareGrants(ctx, "", r.Name)
	if err != nil {
		return RecipientDetail{}, err
	}
	return RecipientDetail{RecipientInfo: r, Tokens: ts, Grants: gs}, nil
}

// ListRecipients lists the recipients sub owns (every one for an
// administrator).
func (s *Service) ListRecipients(ctx context.Context, sub authz.Subject) ([]RecipientInfo, error) {
	all, err := s.store.ListRecipients(ctx)
	if err != nil {
		return nil, err
	}
	if sub.Admin {
		return all, nil
	}
	return slices.DeleteFunc(all, func(r RecipientInfo) bool { return r.Owner != sub.Principal }), nil
}

// GrantShare grants a share to a recipient: sub must own the share (or be
// an administrator). The recipient may be anyone's.
func (s *Service) GrantShare(ctx context.Context, sub authz.Subject, share, recipient string) (GrantInfo, error) {
	sh, err := s.ownedShare(ctx, sub, share)
	if err != nil {
		return GrantInfo{}, err
	}
	r, err := s.store.RecipientByName(ctx, recipient)
	if err != nil {
		return GrantInfo{}, err
	}
	g := GrantInfo{ShareID: sh.ID, Share: sh.Name, RecipientID: r.ID, Recipient: r.Name, CreatedBy: sub.Principal, CreatedAt: s.now().UTC()}
	if err := s.store.GrantShare(ctx, g); err != nil {
		return GrantInfo{}, err
	}
	return g, nil
}

// RevokeShare revokes the grant of a share to a recipient: sub must own
// the share (or be an administrator). What was vended to the recipient
// stops working.
func (s *Service) RevokeShare(ctx context.Context, sub authz.Subject, share, recipient string) error {
	sh, err := s.ownedShare(ctx, sub, share)
	if err != nil {
		return err
	}
	r, err := s.store.RecipientByName(ctx, recipient)
	if err != nil {
		return err
	}
	return s.store.RevokeShare(ctx, sh.Name, r.Name, []string{CredentialPrincipal(r.Name)})
}

// errBadToken is the answer to any token that does not authenticate; it
// does not say why, so that it tells a guesser nothing.
var errBadToken = floe.E(floe.Unauthenticated, "token", "invalid, expired or revoked recipient token")

// Authenticate implements Resolver: the token is looked up by its hash and
// compared in constant time; an unknown, malformed, expired, revoked or
// rotated-out token is floe.Unauthenticated, an address outside the
// recipient's allowlist floe.Forbidden.
func (s *Service) Authenticate(ctx context.Context, token string, remote netip.Addr) (Recipient, error) {
	r, err := s.AuthenticateToken(ctx, token)
	if err != nil {
		return Recipient{}, err
	}
	if len(r.AllowedCIDRs) > 0 && !netallow.ContainsAny(r.AllowedCIDRs, remote) {
		return Recipient{}, floe.E(floe.Forbidden, "recipient", "recipient %q may not connect from %s", r.Name, remote)
	}
	return r, nil
}

// AuthenticateToken is Authenticate without the address check, for a
// transport that checks Recipient.AllowedCIDRs itself once it knows the
// client (the SQL endpoint refuses a login from outside them).
func (s *Service) AuthenticateToken(ctx context.Context, token string) (Recipient, error) {
	if !wellFormed(token) {
		return Recipient{}, errBadToken
	}
	h := HashToken(token)
	t, r, err := s.store.TokenByHash(ctx, h)
	if floe.KindOf(err) == floe.NotFound {
		return Recipient{}, errBadToken
	}
	if err != nil {
		return Recipient{}, err
	}
	if subtle.ConstantTimeCompare([]byte(t.Hash), []byte(h)) != 1 {
		return Recipient{}, errBadToken
	}
	now := s.now()
	if !t.Live(now) || !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) {
		return Recipient{}, errBadToken
	}
	exp := t.ExpiresAt
	if !r.ExpiresAt.IsZero() && (exp.IsZero() || r.ExpiresAt.Before(exp)) {
		exp = r.ExpiresAt
	}
	return Recipient{ID: r.ID, Name: r.Name, TokenID: t.ID, TokenExpiry: exp, AllowedCIDRs: r.AllowedCIDRs}, nil
}

// Revoked implements Resolver: true once r's token expired (as of its
// authentication) or was revoked. With Options.Revocations it answers from
// memory (a revocation reaches every node within a second); without, it
// reads the token from the store.
func (s *Service) Revoked(ctx context.Context, r Recipient) (bool, error) {
	now := s.now()
	if !r.TokenExpiry.IsZero() && !now.Before(r.TokenExpiry) {
		return true, nil
	}
	if s.revs != nil {
		err := s.revs.Session(r.TokenID, "", math.MaxInt64)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, revoke.ErrTokenRevoked):
			return true, nil
		}
		return true, err
	}
	t, err := s.store.Token(ctx, r.TokenID)
	if floe.KindOf(err) == floe.NotFound {
		return true, nil
	}
	if err != nil {
		return true, err
	}
	return !t.Live(now), nil
}

// Shares implements Resolver.
func (s *Service) Shares(ctx context.Context, r Recipient) ([]Share, error) {
	gs, err := s.store.ShareGrants(ctx, "", r.Name)
	if err != nil {
		return nil, err
	}
	out := make([]Share, 0, len(gs))
	for _, g := range gs {
		out = append(out, Share{ID: g.ShareID, Name: g.Share})
	}
	slices.SortFunc(out, func(a, b Share) int { return cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out, nil
}

// errNoShare is the answer for a share that does not exist or is not
// granted to the recipient (the two are indistinguishable).
func errNoShare(share string) error {
	return floe.E(floe.NotFound, "share", "share %q does not exist or is not shared with you", share)
}

// grantedShare returns share if it is granted to r.
func (s *Service) grantedShare(ctx context.Context, r Recipient, share string) (ShareInfo, error) {
	if ValidateEntityName("share", share) != nil {
		return ShareInfo{}, errNoShare(share)
	}
	gs, err := s.store.ShareGrants(ctx, share, r.Name)
	if err != nil {
		return ShareInfo{}, err
	}
	if len(gs) == 0 || gs[0].RecipientID != r.ID {
		return ShareInfo{}, errNoShare(share)
	}
	sh, err := s.store.ShareByName(ctx, share)
	if floe.KindOf(err) == floe.NotFound {
		return ShareInfo{}, errNoShare(share)
	}
	return sh, err
}

// tableOf is the Table of object o (a table or view, or a table or view
// named name inside a namespace object).
func tableOf(sh ShareInfo, o *Object, name string, isView bool) Table {
	t := Table{ID: o.ID, Share: sh.Name, Schema: o.Schema(), Name: o.VisibleName(), Warehouse: sh.Warehouse,
		Ident: catalog.Ident{Namespace: slices.Clone(o.Namespace), Name: o.Name}, IsView: o.Kind == ObjectView,
		History: o.History, PartitionFilter: o.PartitionFilter}
	if o.Kind == ObjectNamespace {
		t.ID = uuid.NewSHA1(uuid.MustParse(o.ID), []byte(name)).String()
		t.Name, t.Ident.Name, t.IsView = name, name, isView
	}
	return t
}

// Tables implements Resolver.
func (s *Service) Tables(ctx context.Context, r Recipient, share string) ([]Table, error) {
	sh, err := s.grantedShare(ctx, r, share)
	if err != nil {
		return nil, err
	}
	objs, err := s.store.ShareObjects(ctx, sh.ID)
	if err != nil {
		return nil, err
	}
	// Tables and views shared by name first, then products' outputs, then
	// namespaces' contents: a name shown twice is the first one's.
	var out []Table
	seen := map[string]bool{}
	add := func(t Table) {
		if k := tableKey(&t); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	for i := range objs {
		o := &objs[i]
		if o.Kind == ObjectTable || o.Kind == ObjectView {
			if s.objectExists(ctx, sh.Warehouse, o) != nil {
				continue // dropped since it was shared
			}
			add(tableOf(sh, o, "", false))
		}
	}
	for i := range objs {
		if o := &objs[i]; o.Kind == ObjectProduct {
			ts, err := s.productTables(ctx, sh, o)
			if err != nil {
				return nil, err
			}
			for _, t := range ts {
				add(t)
			}
		}
	}
	for i := range objs {
		o := &objs[i]
		if o.Kind != ObjectNamespace {
			continue
		}
		for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
			names, err := s.cat.List(ctx, sh.Warehouse, o.Namespace, kind, "", MaxNamespaceTables)
			if floe.KindOf(err) == floe.NotFound {
				break // the namespace was dropped
			}
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				if ValidateVisibleName("table", n) != nil {
					continue // a name recipients cannot address
				}
				add(tableOf(sh, o, n, kind == catalog.KindView))
			}
		}
	}
	slices.SortFunc(out, func(a, b Table) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.Schema), strings.ToLower(b.Schema)), cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)))
	})
	return out, nil
}

// Table implements Resolver.
func (s *Service) Table(ctx context.Context, r Recipient, share, schema, name string) (Table, error) {
	sh, err := s.grantedShare(ctx, r, share)
	if err != nil {
		return Table{}, err
	}
	notFound := floe.E(floe.NotFound, "table", "table %q does not exist in share %q or is not shared with you", schema+"."+name, share)
	if ValidateVisibleName("schema", schema) != nil || ValidateVisibleName("table", name) != nil {
		return Table{}, notFound
	}
	objs, err := s.store.ShareObjects(ctx, sh.ID)
	if err != nil {
		return Table{}, err
	}
	key := strings.ToLower(schema) + "/" + strings.ToLower(name)
	for i := range objs {
		o := &objs[i]
		if (o.Kind == ObjectTable || o.Kind == ObjectView) && o.VisibleKey() == key {
			if s.objectExists(ctx, sh.Warehouse, o) != nil {
				return Table{}, notFound
			}
			return tableOf(sh, o, "", false), nil
		}
	}
	for i := range objs {
		if o := &objs[i]; o.Kind == ObjectProduct {
			ts, err := s.productTables(ctx, sh, o)
			if err != nil {
				return Table{}, err
			}
			for _, t := range ts {
				if tableKey(&t) == key {
					return t, nil
				}
			}
		}
	}
	for i := range objs {
		o := &objs[i]
		if o.Kind != ObjectNamespace || !strings.EqualFold(o.Schema(), schema) {
			continue
		}
		for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
			ok, err := s.cat.Exists(ctx, sh.Warehouse, catalog.Ident{Namespace: o.Namespace, Name: name}, kind)
			if err != nil && floe.KindOf(err) != floe.NotFound {
				return Table{}, err
			}
			if ok {
				return tableOf(sh, o, name, kind == catalog.KindView), nil
			}
		}
		// Names are case-insensitive to recipients: find another spelling.
		for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
			names, err := s.cat.List(ctx, sh.Warehouse, o.Namespace, kind, "", MaxNamespaceTables)
			if err != nil {
				if floe.KindOf(err) == floe.NotFound {
					break
				}
				return Table{}, err
			}
			for _, n := range names {
				if strings.EqualFold(n, name) {
					return tableOf(sh, o, n, kind == catalog.KindView), nil
				}
			}
		}
	}
	return Table{}, notFound
}
