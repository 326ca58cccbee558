package cleanroom

import (
	"context"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
)

// Templates (the custom analysis rule, docs/cleanrooms.md): a configured
// table with the custom rule is read only by the collaboration's query
// templates: named SELECT statements with typed named parameters ($name),
// approved by the owner of every custom-rule table they read and run by
// the members they allow, through the SQL endpoint (EXECUTE TEMPLATE).
// The engine binds parameter values as typed literals on the statement's
// syntax tree, never into its text.

// Audit actions of templates.
const (
	ActionTemplateAdd     = "cleanroom.template.add"
	ActionTemplateApprove = "cleanroom.template.approve"
	ActionTemplateRemove  = "cleanroom.template.remove"
)

// Bounds of templates.
const (
	// MaxTemplates bounds the templates of one collaboration.
	MaxTemplates = 100
	// MaxTemplateSQL bounds a template's SQL text, in bytes.
	MaxTemplateSQL = 16 << 10
	// MaxTemplateParams bounds a template's parameters.
	MaxTemplateParams = 32
)

// Parameter types of templates.
const (
	ParamVarchar = "varchar"
	ParamBigint  = "bigint"
	ParamDouble  = "double"
	ParamBoolean = "boolean"
	ParamDate    = "date"
)

// Template is a pre-approved, parameterised query of a collaboration.
type Template struct {
	Collaboration string `json:"collaboration"`
	Name          string `json:"name"`
	// SQL is one SELECT statement; $name marks a parameter.
	SQL    string          `json:"sql"`
	Params []TemplateParam `json:"params"`
	// AllowedMembers are the members who may run it.
	AllowedMembers []string `json:"allowed_members"`
	// Approvals are the members who approved this text: a template runs
	// only when the owner of every custom-rule table it reads approved it.
	Approvals []Approval `json:"approvals"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	// Version counts its changes, from 1 (compare-and-swap in the store).
	Version int `json:"version"`
}

// TemplateParam is a named, typed parameter of a template.
type TemplateParam struct {
	Name string `json:"name"`
	// Type is varchar, bigint, double, boolean or date.
	Type string `json:"type"`
}

// Approval records that a member approved a template.
type Approval struct {
	Member string    `json:"member"`
	At     time.Time `json:"at"`
}

// Approved reports whether member approved the template.
func (t *Template) Approved(member string) bool {
	return slices.ContainsFunc(t.Approvals, func(a Approval) bool { return a.Member == member })
}

var paramRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Validate checks a template's definition and bounds (not its SQL, which
// the SQL engine checks when it runs).
func (t *Template) Validate() error {
	if err := ValidName("template", t.Name); err != nil {
		return err
	}
	if t.SQL == "" || len(t.SQL) > MaxTemplateSQL || !utf8.ValidString(t.SQL) {
		return invalid("template %q: the SQL is required, valid UTF-8, at most %d bytes", t.Name, MaxTemplateSQL)
	}
	if len(t.Params) > MaxTemplateParams {
		return floe.E(floe.Unprocessable, "collaboration", "template %q: at most %d parameters", t.Name, MaxTemplateParams)
	}
	seen := map[string]bool{}
	for _, p := range t.Params {
		if !paramRe.MatchString(p.Name) || seen[p.Name] {
			return invalid("template %q: parameter %q: use lower-case letters, digits and underscores, each name once", t.Name, p.Name)
		}
		seen[p.Name] = true
		switch p.Type {
		case ParamVarchar, ParamBigint, ParamDouble, ParamBoolean, ParamDate:
		default:
			return invalid("template %q: parameter %q: type %q: use varchar, bigint, double, boolean or date", t.Name, p.Name, p.Type)
		}
	}
	if len(t.AllowedMembers) == 0 || len(t.AllowedMembers) > MaxMembers {
		return invalid("template %q: name the members allowed to run it (1 to %d)", t.Name, MaxMembers)
	}
	return nil
}

// TemplateStore keeps templates (package sqlstore).
type TemplateStore interface {
	// PutTemplate stores t: version 1 creates it (floe.AlreadyExists when
	// the name is taken in its collaboration, floe.Unprocessable once the
	// collaboration has max templates); a higher version replaces version
	// t.Version-1 (floe.Conflict when another change came first).
	PutTemplate(ctx context.Context, t Template, max int) error
	// Template returns a template, or floe.NotFound.
	Template(ctx context.Context, collaboration, name string) (Template, error)
	// Templates lists a collaboration's templates, by name.
	Templates(ctx context.Context, collaboration string) ([]Template, error)
	// DropTemplate removes a template (floe.NotFound when there is none).
	DropTemplate(ctx context.Context, collaboration, name string) error
}

func (s *Service) templates() (TemplateStore, error) {
	if s.o.Templates == nil {
		return nil, floe.E(floe.Unavailable, "collaboration", "query templates are not available on this server")
	}
	return s.o.Templates, nil
}

// AddTemplate adds a template to a collaboration: any member may propose
// one, which counts as its approval; the members it allows must be
// members.
func (s *Service) AddTemplate(ctx context.Context, sub authz.Subject, collab string, t Template) (Template, error) {
	ts, err := s.templates()
	if err != nil {
		return Template{}, err
	}
	c, err := s.visible(ctx, sub, collab)
	if err != nil {
		return Template{}, err
	}
	if !c.IsMember(sub.Principal, sub.PrincipalID) {
		return Template{}, floe.E(floe.Forbidden, "collaboration", "%s is not a member of collaboration %q: only members add templates", sub, collab)
	}
	now := s.o.Now().UTC()
	t.Collaboration, t.CreatedBy, t.CreatedAt, t.Version = collab, sub.Principal, now, 1
	t.Approvals = []Approval{{Member: sub.Principal, At: now}}
	if t.Params == nil {
		t.Params = []TemplateParam{}
	}
	if err := t.Validate(); err != nil {
		return Template{}, err
	}
	for _, m := range t.AllowedMembers {
		if _, ok := c.Member(m); !ok {
			return Template{}, invalid("template %q: allowed member %q is not a member of collaboration %q", t.Name, m, collab)
		}
	}
	if err := ts.PutTemplate(ctx, t, MaxTemplates); err != nil {
		return Template{}, err
	}
	return t, nil
}

// ApproveTemplate records the caller's approval of a template (a member:
// the owners of the custom-rule tables it reads approve it).
func (s *Service) ApproveTemplate(ctx context.Context, sub authz.Subject, collab, name string) (Template, error) {
	ts, err := s.templates()
	if err != nil {
		return Template{}, err
	}
	for attempt := 0; ; attempt++ {
		c, err := s.visible(ctx, sub, collab)
		if err != nil {
			return Template{}, err
		}
		if !c.IsMember(sub.Principal, sub.PrincipalID) {
			return Template{}, floe.E(floe.Forbidden, "collaboration", "%s is not a member of collaboration %q: only members approve templates", sub, collab)
		}
		t, err := ts.Template(ctx, collab, name)
		if err != nil {
			return Template{}, err
		}
		if t.Approved(sub.Principal) {
			return t, nil
		}
		t.Approvals = append(t.Approvals, Approval{Member: sub.Principal, At: s.o.Now().UTC()})
		t.Version++
		err = ts.PutTemplate(ctx, t, MaxTemplates)
		if floe.KindOf(err) == floe.Conflict && attempt < 3 {
			continue
		}
		if err != nil {
			return Template{}, err
		}
		return t, nil
	}
}

// Templates lists a collaboration's templates (every member reads them).
func (s *Service) Templates(ctx context.Context, sub authz.Subject, collab string) ([]Template, error) {
	ts, err := s.templates()
	if err != nil {
		return nil, err
	}
	if _, err := s.visible(ctx, sub, collab); err != nil {
		return nil, err
	}
	return ts.Templates(ctx, collab)
}

// RemoveTemplate removes a template: the member that added it, the
// collaboration's creator or an administrator.
func (s *Service) RemoveTemplate(ctx context.Context, sub authz.Subject, collab, name string) error {
	ts, err := s.templates()
	if err != nil {
		return err
	}
	c, err := s.visible(ctx, sub, collab)
	if err != nil {
		return err
	}
	t, err := ts.Template(ctx, collab, name)
	if err != nil {
		return err
	}
	if sub.Principal != t.CreatedBy && manages(sub, &c) != nil {
		return floe.E(floe.Forbidden, "collaboration", "%s may not remove template %q: its author %q or the collaboration's creator removes it", sub, name, t.CreatedBy)
	}
	return ts.DropTemplate(ctx, collab, name)
}

// RunTemplate returns the template sub may run in a collaboration it
// queries in: sub must be among its allowed members (floe.Forbidden
// otherwise, as for an unknown template). The SQL engine checks the
// approvals against the tables the template reads.
func (s *Service) RunTemplate(ctx context.Context, sub authz.Subject, collab, name string) (Template, error) {
	ts, err := s.templates()
	if err != nil {
		return Template{}, err
	}
	t, err := ts.Template(ctx, collab, name)
	if err != nil && floe.KindOf(err) != floe.NotFound {
		return Template{}, err
	}
	if err != nil || !slices.Contains(t.AllowedMembers, sub.Principal) {
		return Template{}, floe.E(floe.Forbidden, "collaboration", "template %q of collaboration %q does not exist or %s may not run it", name, collab, sub)
	}
	return t, nil
}
