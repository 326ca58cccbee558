package mgmtapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/internal/httperr"
	"github.com/floe-lake/floe/sharing"
)

// Sharing manages shares and recipients (*sharing.Service). Each method
// checks the caller's rights itself (see package sharing).
type Sharing interface {
	CreateShare(ctx context.Context, sub authz.Subject, name, wh, comment string) (sharing.ShareInfo, error)
	Share(ctx context.Context, sub authz.Subject, name string) (sharing.ShareDetail, error)
	ListShares(ctx context.Context, sub authz.Subject) ([]sharing.ShareInfo, error)
	DropShare(ctx context.Context, sub authz.Subject, name string) error
	AddObject(ctx context.Context, sub authz.Subject, share string, spec sharing.ObjectSpec) (sharing.Object, error)
	RemoveObject(ctx context.Context, sub authz.Subject, share, ref string) (sharing.Object, error)
	CreateRecipient(ctx context.Context, sub authz.Subject, spec sharing.RecipientSpec) (sharing.RecipientInfo, sharing.Credential, error)
	RotateToken(ctx context.Context, sub authz.Subject, name string, grace time.Duration) (sharing.Credential, error)
	RevokeTokens(ctx context.Context, sub authz.Subject, name, tokenID string) ([]string, error)
	Recipient(ctx context.Context, sub authz.Subject, name string) (sharing.RecipientDetail, error)
	ListRecipients(ctx context.Context, sub authz.Subject) ([]sharing.RecipientInfo, error)
	GrantShare(ctx context.Context, sub authz.Subject, share, recipient string) (sharing.GrantInfo, error)
	RevokeShare(ctx context.Context, sub authz.Subject, share, recipient string) error
}

// Share is the wire form of a share.
type Share struct {
	Name      string    `json:"name"`
	ID        string    `json:"id"`
	Warehouse string    `json:"warehouse"`
	Owner     string    `json:"owner"`
	Comment   string    `json:"comment"`
	CreatedAt time.Time `json:"created_at"`
	// Objects and Recipients are set when one share is shown.
	Objects    []ShareObject `json:"objects,omitempty"`
	Recipients []ShareGrant  `json:"recipients,omitempty"`
}

// ShareObject is the wire form of an object of a share.
type ShareObject struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Name is the object's real name: "ns.table" or "ns".
	Name string `json:"name"`
	// Schema and Table are the names recipients see (Table is empty for a namespace).
	Schema          string    `json:"schema"`
	Table           string    `json:"table,omitempty"`
	History         bool      `json:"history"`
	PartitionFilter string    `json:"partition_filter,omitempty"`
	AddedBy         string    `json:"added_by"`
	CreatedAt       time.Time `json:"created_at"`
}

// ShareGrant is the wire form of the grant of a share to a recipient.
type ShareGrant struct {
	Share     string    `json:"share"`
	Recipient string    `json:"recipient"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

// ShareList is the answer of GET /shares.
type ShareList struct {
	Shares []Share `json:"shares"`
}

// ShareRequest is the body of POST /shares.
type ShareRequest struct {
	Name string `json:"name"`
	// Warehouse holds the share's objects (default: the server's warehouse).
	Warehouse string `json:"warehouse,omitempty"`
	Comment   string `json:"comment,omitempty"`
}

// ShareObjectRequest is the body of POST /shares/{share}/objects.
type ShareObjectRequest struct {
	Kind            string `json:"kind"`
	Name            string `json:"name"`
	AliasSchema     string `json:"alias_schema,omitempty"`
	AliasName       string `json:"alias_name,omitempty"`
	History         bool   `json:"history,omitempty"`
	PartitionFilter string `json:"partition_filter,omitempty"`
}

// Recipient is the wire form of a recipient (never with a token).
type Recipient struct {
	Name         string            `json:"name"`
	ID           string            `json:"id"`
	Owner        string            `json:"owner"`
	Comment      string            `json:"comment"`
	Properties   map[string]string `json:"properties"`
	AllowedCIDRs []string          `json:"allowed_cidrs"`
	ExpiresAt    *time.Time        `json:"expires_at,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	// Tokens and Shares are set when one recipient is shown.
	Tokens []RecipientToken `json:"tokens,omitempty"`
	Shares []string         `json:"shares,omitempty"`
}

// RecipientToken describes a token of a recipient (never the token).
type RecipientToken struct {
	ID        string     `json:"id"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	Live      bool       `json:"live"`
}

// RecipientList is the answer of GET /recipients.
type RecipientList struct {
	Recipients []Recipient `json:"recipients"`
}

// RecipientRequest is the body of POST /recipients.
type RecipientRequest struct {
	Name         string            `json:"name"`
	Comment      string            `json:"comment,omitempty"`
	Properties   map[string]string `json:"properties,omitempty"`
	AllowedCIDRs []string          `json:"allowed_cidrs,omitempty"`
	ExpiresAt    *time.Time        `json:"expires_at,omitempty"`
}

// RotateRequest is the body of POST /recipients/{recipient}/rotate.
type RotateRequest struct {
	// GraceSeconds is how long the old tokens keep working (absent: one
	// hour; 0: they are revoked at once).
	GraceSeconds *int64 `json:"grace_seconds,omitempty"`
}

// RevokeTokensRequest is the body of POST /recipients/{recipient}/revoke.
type RevokeTokensRequest struct {
	// TokenID revokes only that token (absent: every live token).
	TokenID string `json:"token_id,omitempty"`
}

// RevokedTokens is the answer of POST /recipients/{recipient}/revoke.
type RevokedTokens struct {
	Revoked []string `json:"revoked"`
}

// RecipientCredential is the answer of creating a recipient or rotating
// its token: the bearer token, shown only this once, as a Delta Sharing
// profile file and as Iceberg catalog connections.
type RecipientCredential struct {
	Recipient Recipient       `json:"recipient"`
	TokenID   string          `json:"token_id"`
	Profile   sharing.Profile `json:"profile"`
	// Iceberg is the connection to the share catalog of each share granted
	// to the recipient now; IcebergTemplate is the same for any share
	// ("{share}" stands for its name).
	Iceberg         []sharing.IcebergCatalog `json:"iceberg"`
	IcebergTemplate sharing.IcebergCatalog   `json:"iceberg_template"`
}

// shareRoutes are the sharing operations.
func (h *Handler) shareRoutes() []route {
	const p = "/api/v1"
	return []route{
		{"GET", p + "/shares", "", h.withSharing(h.listShares)},
		{"POST", p + "/shares", "mgmt.share.create", h.withSharing(h.createShare)},
		{"GET", p + "/shares/{share}", "", h.withSharing(h.getShare)},
		{"DELETE", p + "/shares/{share}", "mgmt.share.drop", h.withSharing(h.dropShare)},
		{"POST", p + "/shares/{share}/objects", "mgmt.share.object.add", h.withSharing(h.addShareObject)},
		{"DELETE", p + "/shares/{share}/objects/{object}", "mgmt.share.object.remove", h.withSharing(h.removeShareObject)},
		{"PUT", p + "/shares/{share}/recipients/{recipient}", "mgmt.share.grant", h.withSharing(h.grantShare)},
		{"DELETE", p + "/shares/{share}/recipients/{recipient}", "mgmt.share.revoke", h.withSharing(h.revokeShare)},
		{"GET", p + "/recipients", "", h.withSharing(h.listRecipients)},
		{"POST", p + "/recipients", "mgmt.recipient.create", h.withSharing(h.createRecipient)},
		{"GET", p + "/recipients/{recipient}", "", h.withSharing(h.getRecipient)},
		{"POST", p + "/recipients/{recipient}/rotate", "mgmt.recipient.rotate", h.withSharing(h.rotateRecipient)},
		{"POST", p + "/recipients/{recipient}/revoke", "mgmt.recipient.revoke", h.withSharing(h.revokeRecipient)},
	}
}

// withSharing adapts a sharing operation to a route: it answers
// Unsupported when the server has no sharing service.
func (h *Handler) withSharing(f func(c *call, s Sharing) error) func(c *call) error {
	return func(c *call) error {
		if h.opts.Sharing == nil {
			return floe.E(floe.Unsupported, "", "sharing is not served on this server")
		}
		return f(c, h.opts.Sharing)
	}
}

func shareJSON(s sharing.ShareInfo) Share {
	return Share{Name: s.Name, ID: s.ID, Warehouse: s.Warehouse, Owner: s.Owner, Comment: s.Comment, CreatedAt: s.CreatedAt}
}

func shareObjectJSON(o sharing.Object) ShareObject {
	name := o.Namespace.String()
	switch o.Kind {
	case sharing.ObjectProduct:
		name = o.Name
	case sharing.ObjectNamespace:
	default:
		name += "." + o.Name
	}
	return ShareObject{ID: o.ID, Kind: string(o.Kind), Name: name, Schema: o.Schema(), Table: o.VisibleName(), History: o.History,
		PartitionFilter: o.PartitionFilter, AddedBy: o.AddedBy, CreatedAt: o.CreatedAt}
}

func shareGrantJSON(g sharing.GrantInfo) ShareGrant {
	return ShareGrant{Share: g.Share, Recipient: g.Recipient, CreatedBy: g.CreatedBy, CreatedAt: g.CreatedAt}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func recipientJSON(r sharing.RecipientInfo) Recipient {
	return Recipient{Name: r.Name, ID: r.ID, Owner: r.Owner, Comment: r.Comment, Properties: nonNil(r.Properties),
		AllowedCIDRs: strs(r.AllowedCIDRs), ExpiresAt: timePtr(r.ExpiresAt), CreatedAt: r.CreatedAt}
}

func (h *Handler) listShares(c *call, s Sharing) error {
	ls, err := s.ListShares(c.ctx, c.sub)
	if err != nil {
		return err
	}
	out := ShareList{Shares: []Share{}}
	for _, sh := range ls {
		out.Shares = append(out.Shares, shareJSON(sh))
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) createShare(c *call, s Sharing) error {
	var req ShareRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	c.resource = "share:" + req.Name
	c.note("share", req.Name, "warehouse", req.Warehouse)
	sh, err := s.CreateShare(c.ctx, c.sub, req.Name, req.Warehouse, req.Comment)
	if err != nil {
		return err
	}
	return reply(c, http.StatusCreated, shareJSON(sh))
}

func (h *Handler) getShare(c *call, s Sharing) error {
	d, err := s.Share(c.ctx, c.sub, c.r.PathValue("share"))
	if err != nil {
		return err
	}
	out := shareJSON(d.ShareInfo)
	out.Objects, out.Recipients = []ShareObject{}, []ShareGrant{}
	for _, o := range d.Objects {
		out.Objects = append(out.Objects, shareObjectJSON(o))
	}
	for _, g := range d.Grants {
		out.Recipients = append(out.Recipients, shareGrantJSON(g))
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) dropShare(c *call, s Sharing) error {
	name := c.r.PathValue("share")
	c.resource = "share:" + name
	if err := s.DropShare(c.ctx, c.sub, name); err != nil {
		return err
	}
	return noContent(c)
}

func (h *Handler) addShareObject(c *call, s Sharing) error {
	share := c.r.PathValue("share")
	var req ShareObjectRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	kind, err := sharing.ParseObjectKind(req.Kind)
	if err != nil {
		return err
	}
	c.resource = "share:" + share
	c.note("share", share, "kind", string(kind), "object", req.Name, "history", req.History)
	if req.AliasSchema != "" || req.AliasName != "" {
		c.note("alias_schema", req.AliasSchema, "alias_name", req.AliasName)
	}
	if req.PartitionFilter != "" {
		c.note("partition_filter", req.PartitionFilter)
	}
	o, err := s.AddObject(c.ctx, c.sub, share, sharing.ObjectSpec{Kind: kind, Name: req.Name, AliasSchema: req.AliasSchema,
		AliasName: req.AliasName, History: req.History, PartitionFilter: req.PartitionFilter})
	if err != nil {
		return err
	}
	c.note("object_id", o.ID)
	return reply(c, http.StatusCreated, shareObjectJSON(o))
}

func (h *Handler) removeShareObject(c *call, s Sharing) error {
	share, ref := c.r.PathValue("share"), c.r.PathValue("object")
	c.resource = "share:" + share
	c.note("share", share, "object", ref)
	if _, err := s.RemoveObject(c.ctx, c.sub, share, ref); err != nil {
		return err
	}
	return noContent(c)
}

func (h *Handler) grantShare(c *call, s Sharing) error {
	share, rec := c.r.PathValue("share"), c.r.PathValue("recipient")
	c.resource = "share:" + share
	c.note("share", share, "recipient", rec)
	g, err := s.GrantShare(c.ctx, c.sub, share, rec)
	if err != nil {
		return err
	}
	return reply(c, http.StatusCreated, shareGrantJSON(g))
}

func (h *Handler) revokeShare(c *call, s Sharing) error {
	share, rec := c.r.PathValue("share"), c.r.PathValue("recipient")
	c.resource = "share:" + share
	c.note("share", share, "recipient", rec)
	if err := s.RevokeShare(c.ctx, c.sub, share, rec); err != nil {
		return err
	}
	return noContent(c)
}

func (h *Handler) listRecipients(c *call, s Sharing) error {
	ls, err := s.ListRecipients(c.ctx, c.sub)
	if err != nil {
		return err
	}
	out := RecipientList{Recipients: []Recipient{}}
	for _, r := range ls {
		out.Recipients = append(out.Recipients, recipientJSON(r))
	}
	return reply(c, http.StatusOK, out)
}

func (h *Handler) getRecipient(c *call, s Sharing) error {
	d, err := s.Recipient(c.ctx, c.sub, c.r.PathValue("recipient"))
	if err != nil {
		return err
	}
	out := recipientJSON(d.RecipientInfo)
	out.Tokens, out.Shares = []RecipientToken{}, []string{}
	now := time.Now()
	for _, t := range d.Tokens {
		out.Tokens = append(out.Tokens, RecipientToken{ID: t.ID, CreatedAt: t.CreatedAt, ExpiresAt: timePtr(t.ExpiresAt),
			RevokedAt: timePtr(t.RevokedAt), Live: t.Live(now)})
	}
	for _, g := range d.Grants {
		out.Shares = append(out.Shares, g.Share)
	}
	return reply(c, http.StatusOK, out)
}

// baseURL is the URL recipients reach this server at: Options.PublicURL,
func (h *Handler) baseURL(r *http.Request) string { return httperr.BaseURL(r, h.opts.PublicURL) }

// credential is the answer carrying a new token of r.
func (h *Handler) credential(c *call, s Sharing, r sharing.RecipientInfo, cred sharing.Credential) error {
	base := h.baseURL(c.r)
	out := RecipientCredential{Recipient: recipientJSON(r), TokenID: cred.TokenID, Profile: cred.Profile(base),
		Iceberg: []sharing.IcebergCatalog{}, IcebergTemplate: cred.Iceberg(base, "{share}")}
	d, err := s.Recipient(c.ctx, c.sub, r.Name)
	if err != nil {
		return err
	}
	for _, g := range d.Grants {
		out.Iceberg = append(out.Iceberg, cred.Iceberg(base, g.Share))
	}
	c.note("token_id", cred.TokenID)
	c.w.Header().Set("Cache-Control", "no-store")
	status := http.StatusOK
	if c.r.Method == http.MethodPost && strings.HasSuffix(c.r.URL.Path, "/recipients") {
		status = http.StatusCreated
	}
	return reply(c, status, out)
}

func (h *Handler) createRecipient(c *call, s Sharing) error {
	var req RecipientRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	c.resource = "recipient:" + req.Name
	c.note("recipient", req.Name, "allowed_cidrs", strs(req.AllowedCIDRs))
	spec := sharing.RecipientSpec{Name: req.Name, Comment: req.Comment, Properties: req.Properties, AllowedCIDRs: req.AllowedCIDRs}
	if req.ExpiresAt != nil {
		spec.ExpiresAt = *req.ExpiresAt
		c.note("expires_at", req.ExpiresAt.UTC().Format(time.RFC3339))
	}
	r, cred, err := s.CreateRecipient(c.ctx, c.sub, spec)
	if err != nil {
		return err
	}
	return h.credential(c, s, r, cred)
}

// decodeOptional decodes a body that may be absent (or empty).
func decodeOptional(c *call, v any) error {
	body, err := io.ReadAll(c.r.Body)
	if err != nil {
		return floe.Wrap(floe.Invalid, err, "cannot read request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return decodeBytes(body, v)
}

// MaxRotationGrace bounds the grace period of a rotation (30 days).
const MaxRotationGrace = 30 * 24 * time.Hour

func (h *Handler) rotateRecipient(c *call, s Sharing) error {
	name := c.r.PathValue("recipient")
	c.resource = "recipient:" + name
	var req RotateRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	grace := time.Duration(-1)
	if req.GraceSeconds != nil {
		if *req.GraceSeconds < 0 || time.Duration(*req.GraceSeconds)*time.Second > MaxRotationGrace {
			return floe.E(floe.Invalid, "recipient", "grace_seconds must be 0 to %d", int64(MaxRotationGrace/time.Second))
		}
		grace = time.Duration(*req.GraceSeconds) * time.Second
		c.note("grace_seconds", *req.GraceSeconds)
	}
	cred, err := s.RotateToken(c.ctx, c.sub, name, grace)
	if err != nil {
		return err
	}
	d, err := s.Recipient(c.ctx, c.sub, name)
	if err != nil {
		return err
	}
	return h.credential(c, s, d.RecipientInfo, cred)
}

func (h *Handler) revokeRecipient(c *call, s Sharing) error {
	name := c.r.PathValue("recipient")
	c.resource = "recipient:" + name
	var req RevokeTokensRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	ids, err := s.RevokeTokens(c.ctx, c.sub, name, req.TokenID)
	if err != nil {
		return err
	}
	c.note("revoked", ids)
	return reply(c, http.StatusOK, RevokedTokens{Revoked: ids})
}
