package app

import (
	"context"
	"fmt"
	"time"

	"github.com/floe-lake/floe/revoke"
	"github.com/floe-lake/floe/vend"
)

// openRevocations loads the revocation state and keeps it current in the
// background until Close (see package revoke): the S3 endpoint, the
// credential cache of the catalog and the SQL sessions check it.
func (a *App) openRevocations(ctx context.Context) error {
	l, err := revoke.New(ctx, a.store, revoke.Options{Logger: a.log})
	if err != nil {
		return fmt.Errorf("revocations: %w", err)
	}
	a.revocations = l
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(rctx)
	}()
	a.stopRevocations = func() {
		cancel()
		<-done
	}
	return nil
}

// revokedCredential is s3api.Options.Revoked and restcat.Vending.Revoked.
func (a *App) revokedCredential(s *vend.Session) error {
	return a.revocations.Credential(s.TokenID, s.Principal, s.PrincipalID, s.Table, s.Epoch)
}

// sessionRevoked returns the pgwire.Identity.Revoked of an SQL session of
// access token tokenID ("" for a password login) and principal, that
// started at revocation version since.
func (a *App) sessionRevoked(tokenID, principal string, since int64) func() error {
	l := a.revocations
	return func() error { return l.Session(tokenID, principal, since) }
}

// planCancels is restcat.PlanCancels: a scan plan cancelled on one node
// is a revocation entry (revoke.Plan), which every node loads.
type planCancels struct{ a *App }

func (p planCancels) CancelScanPlan(ctx context.Context, subject string, expires time.Time) error {
	return p.a.store.CancelScanPlan(ctx, subject, expires)
}

func (p planCancels) PlanCancelled(subject string, epoch int64) bool {
	return p.a.revocations.PlanCancelled(subject, epoch)
}

func (p planCancels) Epoch() int64 { return p.a.revocations.Version() }
