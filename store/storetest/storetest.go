// Package storetest is the conformance suite of Floe's metadata store: every
// method of catalog.Store, auth.Store, audit.Store and sharing.Store and the idempotency cache, their
// error kinds and messages, pagination, compare-and-swap under concurrency
// and multi-swap atomicity. Run it against each backend:
//
//	func TestSQLite(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, opts sqlstore.Options) *sqlstore.Store {
//			s, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "floe.db"), opts)
//			...
//		})
//	}
package storetest

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/internal/fakeclock"
	"github.com/floe-lake/floe/store/sqlstore"
)

// Opener returns a new, empty store opened with opts (which carry the
// suite's clock and idempotency lifetime) and closes it when t ends.
type Opener func(t *testing.T, opts sqlstore.Options) *sqlstore.Store

// Run runs the whole suite, each test on a fresh store from open. The tests
// run in parallel.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"Warehouses", testWarehouses},
		{"CreateNamespace", testCreateNamespace},
		{"NamespaceProperties", testNamespaceProperties},
		{"UpdateNamespaceProperties", testUpdateNamespaceProperties},
		{"DropNamespace", testDropNamespace},
		{"ListNamespaces", testListNamespaces},
		{"CreateEntity", testCreateEntity},
		{"Entity", testEntity},
		{"ListEntities", testListEntities},
		{"SwapPointers", testSwapPointers},
		{"SwapPointersAtomic", testSwapPointersAtomic},
		{"SwapPointersConcurrentRounds", testSwapConcurrentRounds},
		{"SwapPointersNoLostUpdate", testSwapNoLostUpdate},
		{"SwapPointersConcurrentCreate", testSwapConcurrentCreate},
		{"ReplaceEntity", testReplaceEntity},
		{"DeleteEntity", testDeleteEntity},
		{"RenameEntity", testRenameEntity},
		{"TableLocations", testTableLocations},
		{"Tombstones", testTombstones},
		{"Principals", testPrincipals},
		{"PrincipalPasswords", testPrincipalPasswords},
		{"PrincipalSecretRotation", testPrincipalSecretRotation},
		{"PrincipalAllowedCIDRs", testPrincipalAllowedCIDRs},
		{"SigningKeys", testSigningKeys},
		{"DeleteSigningKey", testDeleteSigningKey},
		{"ClientKeys", testClientKeys},
		{"UseJTI", testUseJTI},
		{"RevokedTokens", testRevokedTokens},
		{"Audit", testAudit},
		{"AuditQuery", testAuditQuery},
		{"AuditPrune", testAuditPrune},
		{"Idempotency", testIdempotency},
		{"IdempotencyExpiry", testIdempotencyExpiry},
		{"IdempotencyConcurrent", testIdempotencyConcurrent},
		{"Leases", testLeases},
		{"VendKeys", testVendKeys},
		{"Authz", testAuthz},
		{"ColumnBindings", testColumnBindings},
		{"MoveGrantsOn", testMoveGrantsOn},
		{"Sharing", testSharing},
		{"Functions", testFunctions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC))
			opts := sqlstore.Options{
				Logger:              slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
				Now:                 clock.Now,
				IdempotencyLifetime: IdempotencyLifetime,
			}
			s := open(t, opts)
			tt.fn(t, &env{s: s, clock: clock, ctx: t.Context()})
		})
	}
}

// IdempotencyLifetime is the idempotency lifetime the suite opens stores with.
const IdempotencyLifetime = 10 * time.Minute

// env is what each test gets.
type env struct {
	s     *sqlstore.Store
	clock *Clock
	ctx   context.Context
}

// Clock is a settable clock for Options.Now. It is safe for concurrent use.
type Clock = fakeclock.Clock

// wantErr fails t unless err is a *floe.Error of the given kind and entity,
// with the message msg when msg is not empty.
func wantErr(t *testing.T, err error, kind floe.Kind, entity, msg string) {
	t.Helper()
	var fe *floe.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v (%T), want a *floe.Error of kind %v", err, err, kind)
	}
	if fe.Kind != kind || fe.Entity != entity || (msg != "" && fe.Msg != msg) {
		t.Fatalf("error = {Kind: %v, Entity: %q, Msg: %q} (%v), want {Kind: %v, Entity: %q, Msg: %q}",
			fe.Kind, fe.Entity, fe.Msg, err, kind, entity, msg)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
