package mgmtapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
)

// CleanRooms manages clean-room collaborations (*cleanroom.Service). Each
// method checks the caller's rights itself: members see a collaboration
// and its query log, its creator manages members, each member configures
// its own tables.
type CleanRooms interface {
	Create(ctx context.Context, sub authz.Subject, req cleanroom.CreateRequest) (cleanroom.Collaboration, error)
	Get(ctx context.Context, sub authz.Subject, name string) (cleanroom.Collaboration, error)
	List(ctx context.Context, sub authz.Subject) ([]cleanroom.Collaboration, error)
	AddMember(ctx context.Context, sub authz.Subject, name, principal string, receiver bool) (cleanroom.Collaboration, error)
	ConfigureTable(ctx context.Context, sub authz.Subject, name string, t cleanroom.ConfiguredTable) (cleanroom.Collaboration, error)
	Drop(ctx context.Context, sub authz.Subject, name string) error
	Log(ctx context.Context, sub authz.Subject, name string, limit int) ([]cleanroom.QueryRecord, error)
	SetPrivacy(ctx context.Context, sub authz.Subject, name string, p *cleanroom.Privacy) (cleanroom.Collaboration, error)
	SetBudget(ctx context.Context, sub authz.Subject, name string, epsilon float64, period time.Duration) (cleanroom.Budget, error)
	Budget(ctx context.Context, sub authz.Subject, name string) (cleanroom.Budget, error)
	AddTemplate(ctx context.Context, sub authz.Subject, collab string, t cleanroom.Template) (cleanroom.Template, error)
	ApproveTemplate(ctx context.Context, sub authz.Subject, collab, name string) (cleanroom.Template, error)
	Templates(ctx context.Context, sub authz.Subject, collab string) ([]cleanroom.Template, error)
	RemoveTemplate(ctx context.Context, sub authz.Subject, collab, name string) error
}

// TemplateRequest is the body of POST /cleanrooms/{name}/templates.
type TemplateRequest struct {
	Name           string                    `json:"name"`
	SQL            string                    `json:"sql"`
	Params         []cleanroom.TemplateParam `json:"params,omitempty"`
	AllowedMembers []string                  `json:"allowed_members"`
}

// TemplateList is the answer of GET /cleanrooms/{name}/templates.
type TemplateList struct {
	Templates []cleanroom.Template `json:"templates"`
}

// PrivacyRequest is the body of PUT /cleanrooms/{name}/privacy: the
// collaboration's differential privacy, or {"privacy": null} to turn it
// off.
type PrivacyRequest struct {
	Privacy *cleanroom.Privacy `json:"privacy"`
}

// BudgetRequest is the body of PUT /cleanrooms/{name}/budget.
type BudgetRequest struct {
	Epsilon float64 `json:"epsilon"`
	// Period is a Go duration ("24h"); default 24h.
	Period string `json:"period,omitempty"`
}

// CollaborationList is the answer of GET /cleanrooms.
type CollaborationList struct {
	Collaborations []cleanroom.Collaboration `json:"collaborations"`
}

// AddMemberRequest is the body of POST /cleanrooms/{name}/members.
type AddMemberRequest struct {
	Principal string `json:"principal"`
	// ResultReceiver adds the member to the result receivers when the
	// collaboration lists them (otherwise every member receives).
	ResultReceiver bool `json:"result_receiver,omitempty"`
}

// ConfigureTableRequest is the body of PUT
// /cleanrooms/{name}/tables/{table}: the caller's table and its rule.
type ConfigureTableRequest struct {
	// Warehouse defaults to the server's.
	Warehouse string `json:"warehouse,omitempty"`
	// AnalysisRule is aggregation (default), list or custom.
	AnalysisRule string                    `json:"analysis_rule,omitempty"`
	Namespace    catalog.Namespace         `json:"namespace"`
	Table        string                    `json:"table"`
	Columns      []string                  `json:"columns,omitempty"`
	JoinKeys     []string                  `json:"join_keys,omitempty"`
	Dimensions   []string                  `json:"dimensions,omitempty"`
	Identifier   string                    `json:"identifier"`
	Rule         cleanroom.AggregationRule `json:"rule"`
}

// QueryLog is the answer of GET /cleanrooms/{name}/queries.
type QueryLog struct {
	Queries []cleanroom.QueryRecord `json:"queries"`
}

// cleanroomRoutes are the clean room operations.
func (h *Handler) cleanroomRoutes() []route {
	const p = "/api/v1/cleanrooms"
	return []route{
		{"GET", p, "", h.withCleanRooms(h.listCollaborations)},
		{"POST", p, cleanroom.ActionCreate, h.withCleanRooms(h.createCollaboration)},
		{"GET", p + "/{name}", "", h.withCleanRooms(h.getCollaboration)},
		{"DELETE", p + "/{name}", cleanroom.ActionDrop, h.withCleanRooms(h.dropCollaboration)},
		{"POST", p + "/{name}/members", cleanroom.ActionAddMember, h.withCleanRooms(h.addCollaborationMember)},
		{"PUT", p + "/{name}/tables/{table}", cleanroom.ActionConfigure, h.withCleanRooms(h.configureTable)},
		{"GET", p + "/{name}/queries", "", h.withCleanRooms(h.collaborationLog)},
		{"PUT", p + "/{name}/privacy", cleanroom.ActionPrivacy, h.withCleanRooms(h.setPrivacy)},
		{"GET", p + "/{name}/budget", "", h.withCleanRooms(h.getBudget)},
		{"PUT", p + "/{name}/budget", cleanroom.ActionBudget, h.withCleanRooms(h.setBudget)},
		{"GET", p + "/{name}/templates", "", h.withCleanRooms(h.listTemplates)},
		{"POST", p + "/{name}/templates", cleanroom.ActionTemplateAdd, h.withCleanRooms(h.addTemplate)},
		{"DELETE", p + "/{name}/templates/{template}", cleanroom.ActionTemplateRemove, h.withCleanRooms(h.removeTemplate)},
		{"POST", p + "/{name}/templates/{template}/approvals", cleanroom.ActionTemplateApprove, h.withCleanRooms(h.approveTemplate)},
	}
}

// withCleanRooms adapts a clean room operation to a route: it answers
// Unsupported when the server has no clean room service.
func (h *Handler) withCleanRooms(f func(c *call, s CleanRooms) error) func(c *call) error {
	return func(c *call) error {
		if h.opts.CleanRooms == nil {
			return floe.E(floe.Unsupported, "", "clean rooms are not available on this server (they need authentication)")
		}
		return f(c, h.opts.CleanRooms)
	}
}

func (h *Handler) listCollaborations(c *call, s CleanRooms) error {
	ls, err := s.List(c.ctx, c.sub)
	if err != nil {
		return err
	}
	if ls == nil {
		ls = []cleanroom.Collaboration{}
	}
	return reply(c, http.StatusOK, CollaborationList{Collaborations: ls})
}

func (h *Handler) createCollaboration(c *call, s CleanRooms) error {
	var req cleanroom.CreateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	c.resource = "cleanroom:" + req.Name
	c.note("collaboration", req.Name, "members", req.Members)
	out, err := s.Create(c.ctx, c.sub, req)
	if err != nil {
		return err
	}
	return reply(c, http.StatusCreated, out)
}

func (h *Handler) getCollaboration(c *call, s CleanRooms) error {
	out, err := s.Get(c.ctx, c.sub, c.r.PathValue("name"))
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) dropCollaboration(c *call, s CleanRooms) error {
	name := c.r.PathValue("name")
	c.resource = "cleanroom:" + name
	c.note("collaboration", name)
	if err := s.Drop(c.ctx, c.sub, name); err != nil {
		return err
	}
	return noContent(c)
}

func (h *Handler) addCollaborationMember(c *call, s CleanRooms) error {
	name := c.r.PathValue("name")
	var req AddMemberRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	c.resource = "cleanroom:" + name
	c.note("collaboration", name, "member", req.Principal)
	out, err := s.AddMember(c.ctx, c.sub, name, req.Principal, req.ResultReceiver)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) configureTable(c *call, s CleanRooms) error {
	name, table := c.r.PathValue("name"), c.r.PathValue("table")
	var req ConfigureTableRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Warehouse == "" {
		req.Warehouse = h.opts.DefaultWarehouse
	}
	t := cleanroom.ConfiguredTable{Name: table, Warehouse: req.Warehouse, Namespace: req.Namespace, Table: req.Table,
		AnalysisRule: req.AnalysisRule, Columns: req.Columns, JoinKeys: req.JoinKeys, Dimensions: req.Dimensions, Identifier: req.Identifier, Rule: req.Rule}
	c.resource = "cleanroom:" + name
	c.note("collaboration", name, "configured_table", table, "table", t.String(), "analysis_rule", t.AnalysisRule, "min_identifiers", req.Rule.MinIdentifiers)
	out, err := s.ConfigureTable(c.ctx, c.sub, name, t)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) collaborationLog(c *call, s CleanRooms) error {
	limit := 100
	if q := c.r.URL.Query().Get("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			return floe.E(floe.Invalid, "collaboration", "limit %q is not a positive number", q)
		}
		limit = n
	}
	qs, err := s.Log(c.ctx, c.sub, c.r.PathValue("name"), limit)
	if err != nil {
		return err
	}
	if qs == nil {
		qs = []cleanroom.QueryRecord{}
	}
	return reply(c, http.StatusOK, QueryLog{Queries: qs})
}

func (h *Handler) setPrivacy(c *call, s CleanRooms) error {
	name := c.r.PathValue("name")
	var req PrivacyRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	c.resource = "cleanroom:" + name
	if req.Privacy != nil {
		c.note("collaboration", name, "mechanism", req.Privacy.Mechanism, "epsilon", req.Privacy.Epsilon, "delta", req.Privacy.Delta)
	} else {
		c.note("collaboration", name, "mechanism", "off")
	}
	out, err := s.SetPrivacy(c.ctx, c.sub, name, req.Privacy)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) getBudget(c *call, s CleanRooms) error {
	out, err := s.Budget(c.ctx, c.sub, c.r.PathValue("name"))
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) setBudget(c *call, s CleanRooms) error {
	name := c.r.PathValue("name")
	var req BudgetRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	period := 24 * time.Hour
	if req.Period != "" {
		d, err := time.ParseDuration(req.Period)
		if err != nil {
			return floe.E(floe.Invalid, "collaboration", "period %q is not a duration (e.g. 24h)", req.Period)
		}
		period = d
	}
	c.resource = "cleanroom:" + name
	c.note("collaboration", name, "epsilon", req.Epsilon, "period", period.String())
	out, err := s.SetBudget(c.ctx, c.sub, name, req.Epsilon, period)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) listTemplates(c *call, s CleanRooms) error {
	ts, err := s.Templates(c.ctx, c.sub, c.r.PathValue("name"))
	if err != nil {
		return err
	}
	if ts == nil {
		ts = []cleanroom.Template{}
	}
	return reply(c, http.StatusOK, TemplateList{Templates: ts})
}

func (h *Handler) addTemplate(c *call, s CleanRooms) error {
	name := c.r.PathValue("name")
	var req TemplateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	c.resource = "cleanroom:" + name
	c.note("collaboration", name, "template", req.Name, "allowed_members", req.AllowedMembers)
	out, err := s.AddTemplate(c.ctx, c.sub, name, cleanroom.Template{Name: req.Name, SQL: req.SQL, Params: req.Params, AllowedMembers: req.AllowedMembers})
	if err != nil {
		return err
	}
	return reply(c, http.StatusCreated, out)
}

func (h *Handler) removeTemplate(c *call, s CleanRooms) error {
	name, tmpl := c.r.PathValue("name"), c.r.PathValue("template")
	c.resource = "cleanroom:" + name
	c.note("collaboration", name, "template", tmpl)
	if err := s.RemoveTemplate(c.ctx, c.sub, name, tmpl); err != nil {
		return err
	}
	return noContent(c)
}

func (h *Handler) approveTemplate(c *call, s CleanRooms) error {
	name, tmpl := c.r.PathValue("name"), c.r.PathValue("template")
	c.resource = "cleanroom:" + name
	c.note("collaboration", name, "template", tmpl)
	out, err := s.ApproveTemplate(c.ctx, c.sub, name, tmpl)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, out)
}
