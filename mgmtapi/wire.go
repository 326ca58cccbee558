package mgmtapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/httperr"
)

// Securable is the JSON form of an authz.Securable.
type Securable struct {
	Kind      string   `json:"kind"`
	Warehouse string   `json:"warehouse,omitempty"`
	Namespace []string `json:"namespace,omitempty"`
	Name      string   `json:"name,omitempty"`
}

// Grantee is the JSON form of an authz.Grantee.
type Grantee struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Filter is the JSON form of an authz.DataFilter in responses. An empty
// (not absent) include_columns means that no column is readable.
type Filter struct {
	RowFilter      string   `json:"row_filter,omitempty"`
	IncludeColumns []string `json:"include_columns,omitzero"`
	ExcludeColumns []string `json:"exclude_columns,omitzero"`
}

// GrantRequest is the body of POST /grants and POST /grants/revoke.
type GrantRequest struct {
	Grantee       *Grantee          `json:"grantee"`
	Privilege     string            `json:"privilege"`
	On            *Securable        `json:"on"`
	TagExpression string            `json:"tag_expression,omitempty"`
	AllTables     bool              `json:"all_tables,omitempty"`
	Filter        *authz.DataFilter `json:"filter,omitempty"`
}

// Grant is the JSON form of a stored grant.
type Grant struct {
	ID            string    `json:"id"`
	Grantee       Grantee   `json:"grantee"`
	Privilege     string    `json:"privilege"`
	On            Securable `json:"on"`
	TagExpression string    `json:"tag_expression,omitempty"`
	AllTables     bool      `json:"all_tables"`
	Filter        *Filter   `json:"filter,omitempty"`
	Description   string    `json:"description"`
	CreatedAt     time.Time `json:"created_at"`
	CreatedBy     string    `json:"created_by,omitempty"`
	// Warnings say what is wrong with the grant's data filter, e.g. a row
	// filter whose column was dropped (reads through it fail closed).
	Warnings []string `json:"warnings,omitempty"`
}

// TagTarget is the JSON form of an authz.TagTarget.
type TagTarget struct {
	On     *Securable `json:"on"`
	Column string     `json:"column,omitempty"`
}

func securableJSON(s authz.Securable) Securable {
	return Securable{Kind: s.Kind.String(), Warehouse: s.Warehouse, Namespace: []string(s.Namespace), Name: s.Name}
}

func granteeJSON(g authz.Grantee) Grantee { return Grantee{Kind: g.Kind.String(), Name: g.Name} }

func filterJSON(f *authz.DataFilter) *Filter {
	if f == nil {
		return nil
	}
	return &Filter{RowFilter: f.RowFilter, IncludeColumns: f.IncludeColumns, ExcludeColumns: f.ExcludeColumns}
}

func grantJSON(g *authz.Grant) Grant {
	out := Grant{ID: g.ID, Grantee: granteeJSON(g.Grantee), Privilege: g.Privilege.String(), On: securableJSON(g.On),
		TagExpression: g.TagExpr, AllTables: g.AllTables, Description: g.Describe(), CreatedAt: g.CreatedAt.UTC(),
		CreatedBy: g.CreatedBy}
	if !g.Filter.IsZero() {
		out.Filter = filterJSON(g.Filter)
	}
	return out
}

// securable converts and validates the JSON form; an empty warehouse is
// defaultWH.
func (s *Securable) securable(defaultWH string) (authz.Securable, error) {
	if s == nil {
		return authz.Securable{}, floe.E(floe.Invalid, "securable", "missing securable")
	}
	k, err := authz.ParseKind(s.Kind)
	if err != nil {
		return authz.Securable{}, err
	}
	out := authz.Securable{Kind: k, Warehouse: s.Warehouse, Namespace: catalog.Namespace(s.Namespace), Name: s.Name}
	if out.Warehouse == "" {
		out.Warehouse = defaultWH
	}
	if err := out.Validate(); err != nil {
		return authz.Securable{}, err
	}
	return out, nil
}

// grant converts a GrantRequest into an authz.Grant (validated further by
// the Authorizer). A tag-based grant may omit "on": it is then the default
// warehouse.
func (g *GrantRequest) grant(defaultWH string) (authz.Grant, error) {
	if g.Grantee == nil {
		return authz.Grant{}, missing("grantee")
	}
	if g.Privilege == "" {
		return authz.Grant{}, missing("privilege")
	}
	kind, err := authz.ParseGranteeKind(g.Grantee.Kind)
	if err != nil {
		return authz.Grant{}, err
	}
	priv, err := authz.ParsePrivilege(g.Privilege)
	if err != nil {
		return authz.Grant{}, err
	}
	on := g.On
	if on == nil {
		if g.TagExpression == "" {
			return authz.Grant{}, missing("on")
		}
		on = &Securable{Kind: "warehouse"}
	}
	s, err := on.securable(defaultWH)
	if err != nil {
		return authz.Grant{}, err
	}
	out := authz.Grant{Grantee: authz.Grantee{Kind: kind, Name: g.Grantee.Name}, Privilege: priv, On: s,
		TagExpr: g.TagExpression, AllTables: g.AllTables, Filter: g.Filter}
	if err := out.Grantee.Validate(); err != nil {
		return authz.Grant{}, err
	}
	return out, nil
}

func (t *TagTarget) target(defaultWH string) (authz.TagTarget, error) {
	if t == nil || t.On == nil {
		return authz.TagTarget{}, missing("target.on")
	}
	s, err := t.On.securable(defaultWH)
	if err != nil {
		return authz.TagTarget{}, err
	}
	tt := authz.TagTarget{On: s, Column: t.Column}
	if err := tt.Validate(); err != nil {
		return authz.TagTarget{}, err
	}
	return tt, nil
}

func missing(field string) error {
	return floe.E(floe.Invalid, "", "missing required field %q", field)
}

// ParseNamespace splits a namespace given in a query parameter or on the
// command line: levels separated by the unit separator (0x1F) if it holds
// one, else by ".".
func ParseNamespace(s string) catalog.Namespace {
	if s == "" {
		return nil
	}
	if strings.Contains(s, catalog.Sep) {
		return catalog.Namespace(strings.Split(s, catalog.Sep))
	}
	return catalog.Namespace(strings.Split(s, "."))
}

// securableQuery reads a securable from query parameters warehouse,
// namespace, table and view: a table or view when one of those is set, else
// a namespace when namespace is set, else the warehouse.
func securableQuery(q url.Values, defaultWH string) (authz.Securable, error) {
	s := authz.Securable{Kind: authz.KindWarehouse, Warehouse: q.Get("warehouse"), Namespace: ParseNamespace(q.Get("namespace"))}
	if s.Warehouse == "" {
		s.Warehouse = defaultWH
	}
	table, view := q.Get("table"), q.Get("view")
	switch {
	case table != "" && view != "":
		return authz.Securable{}, floe.E(floe.Invalid, "securable", "give table or view, not both")
	case table != "":
		s.Kind, s.Name = authz.KindTable, table
	case view != "":
		s.Kind, s.Name = authz.KindView, view
	case len(s.Namespace) > 0:
		s.Kind = authz.KindNamespace
	}
	if s.IsData() && len(s.Namespace) == 0 {
		return authz.Securable{}, floe.E(floe.Invalid, "securable", "a %s needs its namespace (namespace=a.b)", s.Kind)
	}
	if err := s.Validate(); err != nil {
		return authz.Securable{}, err
	}
	return s, nil
}

// decode reads the JSON request body into v, refusing unknown fields,
// trailing data and bodies over MaxBodyBytes.
func decode(c *call, v any) error {
	body, err := io.ReadAll(c.r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return floe.Wrap(floe.Invalid, err, "request body is larger than %d bytes", mbe.Limit)
		}
		return floe.Wrap(floe.Invalid, err, "cannot read request body")
	}
	return decodeBytes(body, v)
}

func decodeBytes(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return floe.E(floe.Invalid, "", "request body is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return floe.Wrap(floe.Invalid, err, "malformed request body: %s", trim(err.Error()))
	}
	if _, err := dec.Token(); err != io.EOF {
		return floe.E(floe.Invalid, "", "malformed request body: data after the JSON value")
	}
	return nil
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// reply sends v as JSON with status.
func reply(c *call, status int, v any) error {
	httperr.JSON(c.w, status, v)
	return nil
}

// noContent answers 204.
func noContent(c *call) error {
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// nonNil returns m, or an empty map for nil (so that JSON has {}, not null).
func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

// strs returns s, or an empty slice for nil (so that JSON has [], not null).
func strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
