package app_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// TestRevokeTokensEndsSQLSessions: revoke-tokens ends the SQL sessions
// that logged in with the principal's tokens at their next statement (a
// new token logs in again); a session that logged in with a password is
// not touched, and another principal's token session neither.
func TestRevokeTokensEndsSQLSessions(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	etl := f.NewPrincipal(t, "etl")
	connect := func(user, password string) *pgx.Conn {
		t.Helper()
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
		c, err := pgx.Connect(ctx, u.String())
		if err != nil {
			t.Fatalf("login as %s: %v", user, err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	ping := func(c *pgx.Conn) error {
		var one int
		return c.QueryRow(ctx, "select 1").Scan(&one)
	}
	byToken := connect("etl", f.TokenFor(t, etl.ClientID, etl.Secret))
	other := connect("bi", f.PrincipalToken(t, "bi"))
	for _, c := range []*pgx.Conn{byToken, other} {
		if err := ping(c); err != nil {
			t.Fatal(err)
		}
	}
	f.NewPrincipal(t, "ops")
	v, err := pgwire.NewScramVerifier("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.App.Auth().SetSQLPassword(ctx, "ops", v.String()); err != nil {
		t.Fatal(err)
	}
	byPassword := connect("ops", "correct horse battery staple")
	if err := ping(byPassword); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etl", "ops"} {
		if r := f.Do(t, "POST", "/api/v1/principals/"+name+"/revoke-tokens", nil); r.Status != 200 {
			t.Fatalf("revoke-tokens %s: %d %s", name, r.Status, r.Body)
		}
	}
	start := time.Now()
	for err = ping(byToken); err == nil && time.Since(start) < 3*time.Second; err = ping(byToken) {
		time.Sleep(20 * time.Millisecond)
	}
	if err == nil || !strings.Contains(err.Error(), "tokens were revoked") {
		t.Fatalf("the token session after revoke-tokens: %v", err)
	}
	t.Logf("token session refused %s after revoke-tokens", time.Since(start).Round(time.Millisecond))
	if err := ping(other); err != nil {
		t.Errorf("another principal's session: %v", err)
	}
	if err := ping(byPassword); err != nil {
		t.Errorf("a password session after revoke-tokens: %v", err)
	}
	if err := ping(connect("etl", f.TokenFor(t, etl.ClientID, etl.Secret))); err != nil {
		t.Errorf("a session with a new token: %v", err)
	}
}
