package cleanroom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// Audit actions of clean rooms (docs/cleanrooms.md lists them). The
// management API records the changes; the SQL endpoint records each query
// as sql.query with the collaboration in its detail.
const (
	ActionCreate    = "cleanroom.create"
	ActionAddMember = "cleanroom.member.add"
	ActionConfigure = "cleanroom.table.configure"
	ActionDrop      = "cleanroom.drop"
)

// Outcomes of a query log entry.
const (
	OutcomeSuccess = "success"
	OutcomeDenied  = "denied"
	OutcomeFailure = "failure"
)

// Store keeps collaborations and their query logs (package sqlstore).
type Store interface {
	// PutCollaboration stores c: version 1 creates it (floe.AlreadyExists
	// when the name is taken, floe.Unprocessable once the server has max
	// collaborations); a higher version replaces version c.Version-1 and
	// is a floe.Conflict when another change came first.
	PutCollaboration(ctx context.Context, c Collaboration, max int) error
	// Collaboration returns a collaboration, or floe.NotFound.
	Collaboration(ctx context.Context, name string) (Collaboration, error)
	// Collaborations lists every collaboration, by name.
	Collaborations(ctx context.Context) ([]Collaboration, error)
	// DropCollaboration removes a collaboration and its query log.
	DropCollaboration(ctx context.Context, name string) error
	// AddCleanRoomQuery appends r to its collaboration's query log,
	// keeping the newest keep entries.
	AddCleanRoomQuery(ctx context.Context, r QueryRecord, keep int) error
	// CleanRoomQueries lists a collaboration's newest log entries, newest
	// first, at most limit.
	CleanRoomQueries(ctx context.Context, name string, limit int) ([]QueryRecord, error)
}

// Policies returns the current authorization policy (*authz.Authorizer).
type Policies interface {
	Policy(ctx context.Context) (*authz.Policy, error)
}

// Tables is what the service needs of the catalog: a table's top-level
// column names, or floe.NotFound when it is not a table.
type Tables interface {
	Columns(ctx context.Context, warehouse string, id catalog.Ident) ([]string, error)
}

// Options configure a Service.
type Options struct {
	Store    Store
	Policies Policies
	Tables   Tables
	// Subject resolves a principal's name to its subject (an enabled
	// principal of this Floe): members and the owners whose rights
	// configured tables are read with.
	Subject func(ctx context.Context, name string) (authz.Subject, error)
	// Recipient resolves a recipient (another organisation's identity
	// registered here, package sharing) that by may add as a member: by
	// must own it or be an administrator. The subject's Principal is
	// RecipientPrefix + name. Nil: recipients cannot be members.
	Recipient func(ctx context.Context, by authz.Subject, name string) (authz.Subject, error)
	// Budgets keeps privacy budgets (nil: differential privacy is
	// unavailable, its queries refused).
	Budgets Budgets
	// Templates keeps query templates (nil: custom rules are unavailable).
	Templates TemplateStore
	Log       *slog.Logger
	Now       func() time.Time
	// MaxCollaborations bounds the server's collaborations (default
	// MaxCollaborations).
	MaxCollaborations int
	// KeepQueries is how many log entries a collaboration keeps (default
	// KeepQueries).
	KeepQueries int
}

// Service manages collaborations and answers the SQL engine's questions
// about them.
type Service struct {
	o Options
}

// New returns a Service.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxCollaborations <= 0 {
		o.MaxCollaborations = MaxCollaborations
	}
	if o.KeepQueries <= 0 {
		o.KeepQueries = KeepQueries
	}
	return &Service{o: o}
}

// hidden is what a caller who is not a member is told of a collaboration:
// the same as for one that does not exist, so that names do not leak.
func hidden(name string) error {
	return floe.E(floe.NotFound, "collaboration", "collaboration %q does not exist or you are not a member", name)
}

// visible loads a collaboration the caller may see: an administrator or
// a member.
func (s *Service) visible(ctx context.Context, sub authz.Subject, name string) (Collaboration, error) {
	c, err := s.o.Store.Collaboration(ctx, name)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return c, hidden(name)
		}
		return c, err
	}
	if !sub.Admin && !c.IsMember(sub.Principal, sub.PrincipalID) {
		return Collaboration{}, hidden(name)
	}
	return c, nil
}

// CreateRequest is what a new collaboration starts with.
type CreateRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Members are principals to add besides the creator.
	Members []string `json:"members,omitempty"`
	// ResultReceivers limits who may query (default every member).
	ResultReceivers []string `json:"result_receivers,omitempty"`
}

// Create makes a collaboration with the caller as creator and first
// member.
func (s *Service) Create(ctx context.Context, sub authz.Subject, req CreateRequest) (Collaboration, error) {
	now := s.o.Now().UTC()
	c := Collaboration{Name: req.Name, Description: req.Description, Creator: sub.Principal, CreatedAt: now, Version: 1,
		ResultReceivers: req.ResultReceivers, Tables: []ConfiguredTable{}}
	c.Members = append(c.Members, Member{Principal: sub.Principal, PrincipalID: sub.PrincipalID, AddedBy: sub.Principal, AddedAt: now})
	for _, name := range req.Members {
		if name == sub.Principal {
			continue
		}
		m, err := s.member(ctx, sub, name, now)
		if err != nil {
			return Collaboration{}, err
		}
		c.Members = append(c.Members, m)
	}
	if err := c.Validate(); err != nil {
		return Collaboration{}, err
	}
	if err := s.o.Store.PutCollaboration(ctx, c, s.o.MaxCollaborations); err != nil {
		return Collaboration{}, err
	}
	return c, nil
}

// member resolves a principal to add.
func (s *Service) member(ctx context.Context, by authz.Subject, name string, now time.Time) (Member, error) {
	if rname, ok := strings.CutPrefix(name, RecipientPrefix); ok {
		if s.o.Recipient == nil {
			return Member{}, floe.E(floe.Unsupported, "collaboration", "member %q: recipients cannot be members on this server (sharing is off)", name)
		}
		p, err := s.o.Recipient(ctx, by, rname)
		if err != nil {
			if k := floe.KindOf(err); k == floe.NotFound || k == floe.Forbidden {
				return Member{}, floe.E(floe.Invalid, "collaboration", "member %q: no such recipient of yours on this Floe (a recipient is added by its owner or an administrator)", name)
			}
			return Member{}, err
		}
		return Member{Principal: p.Principal, PrincipalID: p.PrincipalID, AddedBy: by.Principal, AddedAt: now}, nil
	}
	p, err := s.o.Subject(ctx, name)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return Member{}, floe.E(floe.Invalid, "collaboration", "member %q: no such principal on this Floe", name)
		}
		return Member{}, err
	}
	return Member{Principal: p.Principal, PrincipalID: p.PrincipalID, AddedBy: by.Principal, AddedAt: now}, nil
}

// Get returns a collaboration the caller is a member of (any for an
// administrator).
func (s *Service) Get(ctx context.Context, sub authz.Subject, name string) (Collaboration, error) {
	return s.visible(ctx, sub, name)
}

// List returns the collaborations the caller is a member of (all for an
// administrator).
func (s *Service) List(ctx context.Context, sub authz.Subject) ([]Collaboration, error) {
	all, err := s.o.Store.Collaborations(ctx)
	if err != nil {
		return nil, err
	}
	out := []Collaboration{}
	for _, c := range all {
		if sub.Admin || c.IsMember(sub.Principal, sub.PrincipalID) {
			out = append(out, c)
		}
	}
	return out, nil
}

// update applies change to the current version of a collaboration the
// caller may see and stores it, retrying a few times on a concurrent
// change.
func (s *Service) update(ctx context.Context, sub authz.Subject, name string, change func(*Collaboration) error) (Collaboration, error) {
	for attempt := 0; ; attempt++ {
		c, err := s.visible(ctx, sub, name)
		if err != nil {
			return c, err
		}
		if err := change(&c); err != nil {
			return Collaboration{}, err
		}
		if err := c.Validate(); err != nil {
			return Collaboration{}, err
		}
		c.Version++
		err = s.o.Store.PutCollaboration(ctx, c, s.o.MaxCollaborations)
		if floe.KindOf(err) == floe.Conflict && attempt < 3 {
			continue
		}
		if err != nil {
			return Collaboration{}, err
		}
		return c, nil
	}
}

// manages reports whether sub may change a collaboration's membership:
// its creator or an administrator.
func manages(sub authz.Subject, c *Collaboration) error {
	if sub.Admin || sub.Principal == c.Creator {
		return nil
	}
	return floe.E(floe.Forbidden, "collaboration", "%s is not the creator of collaboration %q: only %q (or an administrator) manages its members", sub, c.Name, c.Creator)
}

// AddMember adds a principal of this Floe to a collaboration (its creator
// or an administrator), optionally as a result receiver when the
// collaboration lists them.
func (s *Service) AddMember(ctx context.Context, sub authz.Subject, name, principal string, receiver bool) (Collaboration, error) {
	return s.update(ctx, sub, name, func(c *Collaboration) error {
		if err := manages(sub, c); err != nil {
			return err
		}
		if _, ok := c.Member(principal); ok {
			return floe.E(floe.AlreadyExists, "collaboration", "%q is already a member of collaboration %q", principal, name)
		}
		if len(c.Members) >= MaxMembers {
			return floe.E(floe.Unprocessable, "collaboration", "limit reached: at most %d members per collaboration", MaxMembers)
		}
		m, err := s.member(ctx, sub, principal, s.o.Now().UTC())
		if err != nil {
			return err
		}
		c.Members = append(c.Members, m)
		if receiver && len(c.ResultReceivers) > 0 {
			c.ResultReceivers = append(c.ResultReceivers, principal)
		}
		return nil
	})
}

// ConfigureTable adds (or replaces, when it configured it) a member's
// table. The caller must be a member and hold SELECT on the table without
// a data filter: a member may only bring rows it may read in full. Every
// column named must exist in the table.
func (s *Service) ConfigureTable(ctx context.Context, sub authz.Subject, name string, t ConfiguredTable) (Collaboration, error) {
	t.Owner, t.OwnerID = sub.Principal, sub.PrincipalID
	t.AddedAt = s.o.Now().UTC()
	if t.AnalysisRule == "" {
		t.AnalysisRule = RuleAggregation
	}
	if t.Columns == nil {
		t.Columns = []string{}
	}
	if t.JoinKeys == nil {
		t.JoinKeys = []string{}
	}
	if t.Dimensions == nil {
		t.Dimensions = []string{}
	}
	if err := t.Validate(); err != nil {
		return Collaboration{}, err
	}
	if IsRecipient(sub.Principal) {
		return Collaboration{}, floe.E(floe.Forbidden, "collaboration", "%s is a recipient member: it queries and receives results but brings no tables (its data enters through a member of this Floe)", sub)
	}
	if _, err := s.visible(ctx, sub, name); err != nil {
		return Collaboration{}, err
	}
	if err := s.readsInFull(ctx, sub, t); err != nil {
		return Collaboration{}, err
	}
	cols, err := s.o.Tables.Columns(ctx, t.Warehouse, t.Ident())
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return Collaboration{}, floe.E(floe.Invalid, "collaboration", "configured table %q: table %s does not exist", t.Name, t)
		}
		return Collaboration{}, err
	}
	for _, c := range t.AllColumns() {
		if !slices.Contains(cols, c) {
			return Collaboration{}, floe.E(floe.Invalid, "collaboration", "configured table %q: table %s has no column %q", t.Name, t, c)
		}
	}
	return s.update(ctx, sub, name, func(c *Collaboration) error {
		if !c.IsMember(sub.Principal, sub.PrincipalID) {
			return floe.E(floe.Forbidden, "collaboration", "%s is not a member of collaboration %q: only members configure tables", sub, name)
		}
		i := slices.IndexFunc(c.Tables, func(x ConfiguredTable) bool { return x.Name == t.Name })
		switch {
		case i >= 0 && c.Tables[i].Owner != sub.Principal:
			return floe.E(floe.AlreadyExists, "collaboration", "collaboration %q already has a configured table %q (of member %q)", name, t.Name, c.Tables[i].Owner)
		case i >= 0:
			c.Tables[i] = t
		case len(c.Tables) >= MaxTables:
			return floe.E(floe.Unprocessable, "collaboration", "limit reached: at most %d configured tables per collaboration", MaxTables)
		default:
			c.Tables = append(c.Tables, t)
		}
		return nil
	})
}

// readsInFull checks that sub holds SELECT on t's table without a data
// filter (row filter or column restriction).
func (s *Service) readsInFull(ctx context.Context, sub authz.Subject, t ConfiguredTable) error {
	pol, err := s.o.Policies.Policy(ctx)
	if err != nil {
		return floe.Wrap(floe.Unavailable, err, "authorization policy unavailable")
	}
	filters, err := pol.ReadFilters(sub, authz.Table(t.Warehouse, t.Ident()))
	if err != nil {
		return floe.Wrap(floe.Forbidden, err, "configured table %q: %s may not read table %s: a member configures only tables it may read (SELECT)", t.Name, sub, t)
	}
	if filters != nil {
		return floe.E(floe.Forbidden, "collaboration", "configured table %q: %s reads table %s through a data filter: a member configures only tables it may read in full", t.Name, sub, t)
	}
	return nil
}

// Drop removes a collaboration and its query log (its creator or an
// administrator).
func (s *Service) Drop(ctx context.Context, sub authz.Subject, name string) error {
	c, err := s.visible(ctx, sub, name)
	if err != nil {
		return err
	}
	if err := manages(sub, &c); err != nil {
		return err
	}
	return s.o.Store.DropCollaboration(ctx, name)
}

// Log returns the newest entries of a collaboration's query log (every
// member reads it), newest first.
func (s *Service) Log(ctx context.Context, sub authz.Subject, name string, limit int) ([]QueryRecord, error) {
	if _, err := s.visible(ctx, sub, name); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > s.o.KeepQueries {
		limit = s.o.KeepQueries
	}
	return s.o.Store.CleanRoomQueries(ctx, name, limit)
}

// Room is a collaboration as the SQL engine queries it: the definition
// and the subjects of the configured tables' owners, whose rights read
// them.
type Room struct {
	Collaboration Collaboration
	Owners        map[string]authz.Subject
}

// Room returns the collaboration sub queries in: sub must be a member and
// a result receiver (floe.Forbidden otherwise, the same for an unknown
// collaboration). Each configured table's owner must still be an enabled
// principal (the same one) and still read the table in full.
func (s *Service) Room(ctx context.Context, sub authz.Subject, name string) (*Room, error) {
	c, err := s.o.Store.Collaboration(ctx, name)
	if err != nil && floe.KindOf(err) != floe.NotFound {
		return nil, err
	}
	if err != nil || !c.IsMember(sub.Principal, sub.PrincipalID) {
		return nil, floe.E(floe.Forbidden, "collaboration", "collaboration %q does not exist or %s is not a member", name, sub)
	}
	if !c.Receives(sub.Principal) {
		return nil, floe.E(floe.Forbidden, "collaboration", "%s is not a result receiver of collaboration %q", sub, name)
	}
	r := &Room{Collaboration: c, Owners: map[string]authz.Subject{}}
	for _, t := range c.Tables {
		if _, ok := r.Owners[t.Owner]; ok {
			continue
		}
		o, err := s.o.Subject(ctx, t.Owner)
		if err != nil || (t.OwnerID != "" && o.PrincipalID != t.OwnerID) {
			return nil, floe.E(floe.Forbidden, "collaboration", "configured table %q: its owner %q is no longer an enabled principal", t.Name, t.Owner)
		}
		r.Owners[t.Owner] = o
	}
	for _, t := range c.Tables {
		if err := s.readsInFull(ctx, r.Owners[t.Owner], t); err != nil {
			return nil, floe.E(floe.Forbidden, "collaboration", "configured table %q: its owner %q no longer reads it in full", t.Name, t.Owner)
		}
	}
	return r, nil
}

// Record appends one query to its collaboration's log; a failure is
// logged (the audit log has the query too).
func (s *Service) Record(ctx context.Context, r QueryRecord) {
	if r.ID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		r.ID = hex.EncodeToString(b[:])
	}
	if r.At.IsZero() {
		r.At = s.o.Now().UTC()
	}
	if err := s.o.Store.AddCleanRoomQuery(ctx, r, s.o.KeepQueries); err != nil {
		s.o.Log.ErrorContext(ctx, "cleanroom: query not logged", "collaboration", r.Collaboration, "err", err)
	}
}
