package app

import (
	"context"
	"fmt"
	"strconv"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/products"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sharing/deltasharing"
)

// SharingSettings bounds what the sharing service stores (YAML sharing;
// see docs/sharing.md and docs/configuration.md).
type SharingSettings struct {
	// MaxShares is the most shares (env FLOE_SHARING_MAX_SHARES, default 1000).
	MaxShares int `yaml:"max_shares"`
	// MaxObjectsPerShare is the most tables, views and namespaces of one
	// share (env FLOE_SHARING_MAX_OBJECTS_PER_SHARE, default 1000).
	MaxObjectsPerShare int `yaml:"max_objects_per_share"`
	// MaxRecipients is the most recipients (env FLOE_SHARING_MAX_RECIPIENTS,
	// default 10000).
	MaxRecipients int `yaml:"max_recipients"`
	// MaxTokensPerRecipient is the most live bearer tokens of one recipient,
	// counting old ones in their rotation grace (env
	// FLOE_SHARING_MAX_TOKENS_PER_RECIPIENT, default 5).
	MaxTokensPerRecipient int `yaml:"max_tokens_per_recipient"`
}

// defaultSharing is the default SharingSettings.
func defaultSharing() SharingSettings {
	return SharingSettings{MaxShares: sharing.DefaultMaxShares, MaxObjectsPerShare: sharing.DefaultMaxObjectsPerShare,
		MaxRecipients: sharing.DefaultMaxRecipients, MaxTokensPerRecipient: sharing.DefaultMaxTokensPerRecipient}
}

// Limits returns the settings as the service's limits.
func (s SharingSettings) Limits() sharing.Limits {
	return sharing.Limits{Shares: s.MaxShares, ObjectsPerShare: s.MaxObjectsPerShare, Recipients: s.MaxRecipients,
		TokensPerRecipient: s.MaxTokensPerRecipient}
}

func (s *SharingSettings) loadEnv(getenv func(string) string) error {
	for name, dst := range map[string]*int{"FLOE_SHARING_MAX_SHARES": &s.MaxShares,
		"FLOE_SHARING_MAX_OBJECTS_PER_SHARE": &s.MaxObjectsPerShare, "FLOE_SHARING_MAX_RECIPIENTS": &s.MaxRecipients,
		"FLOE_SHARING_MAX_TOKENS_PER_RECIPIENT": &s.MaxTokensPerRecipient} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = n
		}
	}
	return nil
}

func (s SharingSettings) validate() error {
	for _, c := range []struct {
		name   string
		v, max int
	}{{"sharing.max_shares", s.MaxShares, 1 << 20}, {"sharing.max_objects_per_share", s.MaxObjectsPerShare, 100000},
		{"sharing.max_recipients", s.MaxRecipients, 1 << 20}, {"sharing.max_tokens_per_recipient", s.MaxTokensPerRecipient, 100}} {
		if c.v < 1 || c.v > c.max {
			return fmt.Errorf("%s %d: must be between 1 and %d", c.name, c.v, c.max)
		}
	}
	if s.MaxTokensPerRecipient < 2 {
		return fmt.Errorf("sharing.max_tokens_per_recipient %d: must be at least 2 (a rotation keeps the old token in its grace)", s.MaxTokensPerRecipient)
	}
	return nil
}

// newSharing builds the sharing service over the store, the catalog, the
// authorizer and this node's revocations.
func (a *App) newSharing() *sharing.Service {
	return sharing.New(sharing.Options{Store: a.store, Catalog: a.cat, Authz: a.authz, Revocations: a.revocations,
		Limits: a.cfg.Sharing.Limits(), DefaultWarehouse: a.cfg.Warehouse, Audit: a.events.Record, Logger: a.log,
		FilterColumns: deltasharing.FilterColumns, Products: shareProducts{a}})
}

// shareProducts resolves the data products shares hold: the current
// version from the store, as it stands for every reader.
type shareProducts struct{ a *App }

func (s shareProducts) Product(ctx context.Context, wh, name string) (sharing.SharedProduct, error) {
	p, err := s.a.store.ProductVersion(ctx, wh, name, 0)
	if err != nil {
		if floe.KindOf(err) == floe.NotFound {
			return sharing.SharedProduct{}, floe.E(floe.NotFound, "data product", "data product %q does not exist in warehouse %q", name, wh)
		}
		return sharing.SharedProduct{}, err
	}
	out := sharing.SharedProduct{Name: p.Name, Version: p.Version, Description: p.Description, Owner: p.Owner}
	for _, o := range p.Outputs {
		out.Outputs = append(out.Outputs, sharing.ProductOutput{Ident: o.Ident(), IsView: o.Kind == products.PortView})
	}
	return out, nil
}

// Sharing returns the sharing service: shares, recipients and, for the
// protocol servers (Delta Sharing, share catalogs), the sharing.Resolver.
func (a *App) Sharing() *sharing.Service { return a.sharing }
