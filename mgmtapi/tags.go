package mgmtapi

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/products"
)

// reservedTags refuses tag keys reserved to data products: a product keeps
// its tag on exactly its outputs, and grants on the product follow it.
func reservedTags(keys []string) error {
	for _, k := range keys {
		if strings.HasPrefix(k, products.TagPrefix) {
			return floe.E(floe.Invalid, "tag", "tag key %q is reserved: keys beginning with %q are kept by data products on their outputs (grant on the product, or publish it with this output)", k, products.TagPrefix)
		}
	}
	return nil
}

// Tags is the answer of the tag endpoints: the tags set on a target itself
// and its effective tags (inherited from the warehouse, namespaces and
// table, a lower level overriding a key set above).
type Tags struct {
	Target        TagTarget         `json:"target"`
	Tags          map[string]string `json:"tags"`
	EffectiveTags map[string]string `json:"effective_tags"`
}

// SetTagsRequest is the body of PUT /tags.
type SetTagsRequest struct {
	Target *TagTarget        `json:"target"`
	Tags   map[string]string `json:"tags"`
}

// DeleteTagsRequest is the body of DELETE /tags.
type DeleteTagsRequest struct {
	Target *TagTarget `json:"target"`
	Keys   []string   `json:"keys"`
}

func (h *Handler) replyTags(c *call, t authz.TagTarget) error {
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	s := securableJSON(t.On)
	return reply(c, http.StatusOK, Tags{Target: TagTarget{On: &s, Column: t.Column},
		Tags: nonNil(p.Tags(t)), EffectiveTags: nonNil(p.EffectiveTags(t))})
}

func (h *Handler) getTags(c *call) error {
	s, err := securableQuery(c.r.URL.Query(), h.opts.DefaultWarehouse)
	if err != nil {
		return err
	}
	t := authz.TagTarget{On: s, Column: c.r.URL.Query().Get("column")}
	if err := t.Validate(); err != nil {
		return err
	}
	p, err := h.policy(c)
	if err != nil {
		return err
	}
	if err := p.Check(c.sub, authz.Describe, s); err != nil {
		return err
	}
	return h.replyTags(c, t)
}

// tagTarget converts a request target and checks that the caller may
// change its tags.
func (h *Handler) tagTarget(c *call, tt *TagTarget) (authz.TagTarget, error) {
	t, err := tt.target(h.opts.DefaultWarehouse)
	if err != nil {
		return authz.TagTarget{}, err
	}
	c.resource = AuditResource(t.On)
	if t.Column != "" {
		c.note("column", t.Column)
	}
	p, err := h.policy(c)
	if err != nil {
		return authz.TagTarget{}, err
	}
	if err := p.CheckTagAdmin(c.sub, t); err != nil {
		return authz.TagTarget{}, err
	}
	return t, nil
}

func (h *Handler) setTags(c *call) error {
	var req SetTagsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Tags == nil {
		return missing("tags")
	}
	c.note("tags", req.Tags)
	if err := reservedTags(slices.Collect(maps.Keys(req.Tags))); err != nil {
		return err
	}
	t, err := h.tagTarget(c, req.Target)
	if err != nil {
		return err
	}
	if err := h.opts.Authz.SetTags(c.ctx, t, req.Tags); err != nil {
		return err
	}
	return h.replyTags(c, t)
}

func (h *Handler) deleteTags(c *call) error {
	var req DeleteTagsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Keys == nil {
		return missing("keys")
	}
	c.note("keys", req.Keys)
	if err := reservedTags(req.Keys); err != nil {
		return err
	}
	t, err := h.tagTarget(c, req.Target)
	if err != nil {
		return err
	}
	if err := h.opts.Authz.DeleteTags(c.ctx, t, req.Keys...); err != nil {
		return err
	}
	return h.replyTags(c, t)
}
