package app

import (
	"context"
	"net/netip"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/sharing"
	"github.com/floe-lake/floe/sqlgw/pgwire"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/cleanroom"
	"github.com/floe-lake/floe/mgmtapi"
	"github.com/floe-lake/floe/products"
)

// cleanroomTables is the clean room service's view of the catalog: a
// table's top-level columns.
type cleanroomTables struct{ cat *catalog.Catalog }

func (t cleanroomTables) Columns(ctx context.Context, wh string, id catalog.Ident) ([]string, error) {
	return productOutputs(t).Columns(ctx, wh, products.Port{Kind: products.PortTable, Namespace: id.Namespace, Table: id.Name})
}

// newCleanRooms builds the clean room service; nil without
// authentication (insecure_no_auth): a clean room needs principals and
// grants.
func (a *App) newCleanRooms() *cleanroom.Service {
	if a.cfg.InsecureNoAuth {
		return nil
	}
	o := cleanroom.Options{
		Store: a.store, Budgets: a.store, Templates: a.store, Policies: a.authz, Tables: cleanroomTables{a.cat}, Subject: a.productSubject, Log: a.log,
	}
	if a.sharing != nil {
		o.Recipient = a.cleanroomRecipient
	}
	return cleanroom.New(o)
}

// cleanroomRecipient resolves a recipient that by (its owner or an
// administrator) adds to a collaboration.
func (a *App) cleanroomRecipient(ctx context.Context, by authz.Subject, name string) (authz.Subject, error) {
	r, err := a.sharing.Recipient(ctx, by, name)
	if err != nil {
		return authz.Subject{}, err
	}
	return recipientSubject(r.Name, r.ID), nil
}

// recipientSubject is the subject a recipient acts as in clean rooms.
func recipientSubject(name, id string) authz.Subject {
	return authz.Subject{Principal: cleanroom.RecipientPrefix + name, PrincipalID: id}
}

// recipientClaims are the claims of a recipient's bearer token on the
// management API's clean-room routes: no scopes, no administrator.
func recipientClaims(r sharing.Recipient) auth.Claims {
	sub := recipientSubject(r.Name, r.ID)
	return auth.Claims{PrincipalID: sub.PrincipalID, Principal: sub.Principal, TokenID: r.TokenID, ExpiresAt: r.TokenExpiry, AllowedCIDRs: r.AllowedCIDRs}
}

// recipientVerifier lets recipients use the management API's clean-room
// routes (mgmtapi.Options.Recipients).
type recipientVerifier struct{ a *App }

func (v recipientVerifier) VerifyRecipient(ctx context.Context, token string, client netip.Addr) (auth.Claims, error) {
	r, err := v.a.sharing.Authenticate(ctx, token, client)
	if err != nil {
		return auth.Claims{}, err
	}
	return recipientClaims(r), nil
}

// recipientIdentity is the SQL session identity of a recipient that
// logged in with its bearer token: it may only query in the clean rooms
// it is a member of, and its session ends when the token is revoked or
// expires.
func (a *App) recipientIdentity(ctx context.Context, token string) (pgwire.Identity, error) {
	r, err := a.sharing.AuthenticateToken(ctx, token)
	if err != nil {
		return pgwire.Identity{}, err
	}
	c := recipientClaims(r)
	id := sqlIdentity(c)
	sh := a.sharing
	id.Revoked = func() error {
		revoked, err := sh.Revoked(context.Background(), r)
		if err == nil && revoked {
			err = floe.E(floe.Unauthenticated, "token", "the recipient token was revoked or expired")
		}
		return err
	}
	return id, nil
}

// CleanRooms is the clean room service (nil under insecure_no_auth).
func (a *App) CleanRooms() *cleanroom.Service { return a.cleanrooms }

// cleanRoomsAPI is the service for the management API: a nil interface
// when there is none.
func (a *App) cleanRoomsAPI() mgmtapi.CleanRooms {
	if a.cleanrooms == nil {
		return nil
	}
	return a.cleanrooms
}
