package mgmtapi

import (
	"net/http"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
)

// Role is the JSON form of a role with its members.
type Role struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	Members     []string  `json:"members"`
}

// RoleRequest is the body of POST /roles.
type RoleRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

const managingRoles = "managing roles"

func roleJSON(p *authz.Policy, r authz.RoleInfo) Role {
	return Role{Name: r.Name, Description: r.Description, CreatedAt: r.CreatedAt.UTC(), Members: strs(p.Members(r.Name))}
}

// adminPolicy checks that the caller is an administrator and returns the policy.
func (h *Handler) adminPolicy(c *call, what string) (*authz.Policy, error) {
	if err := requireAdmin(c.sub, what); err != nil {
		return nil, err
	}
	return h.policy(c)
}

func (h *Handler) listRoles(c *call) error {
	p, err := h.adminPolicy(c, managingRoles)
	if err != nil {
		return err
	}
	out := struct {
		Roles []Role `json:"roles"`
	}{Roles: []Role{}}
	for _, r := range p.Roles() {
		out.Roles = append(out.Roles, roleJSON(p, r))
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) createRole(c *call) error {
	if _, err := h.adminPolicy(c, managingRoles); err != nil {
		return err
	}
	var req RoleRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return missing("name")
	}
	c.resource = "role:" + req.Name
	c.note("name", req.Name, "description", req.Description)
	if err := h.opts.Authz.CreateRole(c.ctx, authz.RoleInfo{Name: req.Name, Description: req.Description}); err != nil {
		return err
	}
	return h.replyRole(c, http.StatusCreated, req.Name)
}

func (h *Handler) replyRole(c *call, status int, name string) error {
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	r, ok := p.Role(name)
	if !ok {
		return floe.E(floe.NotFound, "role", "Role does not exist: %s", name)
	}
	return reply(c, status, roleJSON(p, r))
}

func (h *Handler) getRole(c *call) error {
	if _, err := h.adminPolicy(c, managingRoles); err != nil {
		return err
	}
	return h.replyRole(c, http.StatusOK, c.r.PathValue("role"))
}

func (h *Handler) dropRole(c *call) error {
	name := c.r.PathValue("role")
	c.resource = "role:" + name
	if _, err := h.adminPolicy(c, managingRoles); err != nil {
		return err
	}
	if err := h.opts.Authz.DropRole(c.ctx, name); err != nil {
		return err
	}
	return noContent(c)
}

// addMember is idempotent: adding a member twice answers 204 both times.
func (h *Handler) addMember(c *call) error {
	role, principal := c.r.PathValue("role"), c.r.PathValue("principal")
	c.resource = "role:" + role
	c.note("member", principal)
	if _, err := h.adminPolicy(c, managingRoles); err != nil {
		return err
	}
	err := h.opts.Authz.AddMember(c.ctx, role, principal)
	if floe.KindOf(err) == floe.AlreadyExists && floe.EntityOf(err) == "role member" {
		c.note("already_member", true)
		err = nil
	}
	if err != nil {
		return err
	}
	return noContent(c)
}

func (h *Handler) removeMember(c *call) error {
	role, principal := c.r.PathValue("role"), c.r.PathValue("principal")
	c.resource = "role:" + role
	c.note("member", principal)
	if _, err := h.adminPolicy(c, managingRoles); err != nil {
		return err
	}
	if err := h.opts.Authz.RemoveMember(c.ctx, role, principal); err != nil {
		return err
	}
	return noContent(c)
}
