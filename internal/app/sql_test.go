package app_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// TestSQLPasswordLogin: a principal given a SQL password logs in to the
// SQL endpoint with SCRAM-SHA-256 (pgx), and only with that password; a
// disabled one does not; it can no longer log in with a token (a user has
// one method, as in PostgreSQL); one without a password logs in with a token.
func TestSQLPasswordLogin(t *testing.T) {
	f := testkit.Start(t)
	ctx := context.Background()
	analyst := f.NewPrincipal(t, "analyst")
	analystToken := f.TokenFor(t, analyst.ClientID, analyst.Secret)
	v, err := pgwire.NewScramVerifier("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.App.Auth().SetSQLPassword(ctx, "analyst", v.String()); err != nil {
		t.Fatal(err)
	}
	connect := func(user, password string) (*pgx.Conn, error) {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
		return pgx.Connect(ctx, u.String())
	}
	c, err := connect("analyst", "correct horse battery staple")
	if err != nil {
		t.Fatalf("SCRAM login: %v", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)

	tests := []struct {
		name, user, password, code string
	}{
		{"wrong password", "analyst", "correct horse battery stapler", "28P01"},
		{"token instead of password", "analyst", analystToken, "28P01"},
		{"unknown user", "ghost", "correct horse battery staple", "28P01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := connect(tt.user, tt.password)
			var pe *pgconn.PgError
			if err == nil {
				c.Close(ctx)
				t.Fatal("login accepted")
			}
			if !errors.As(err, &pe) || pe.Code != tt.code {
				t.Fatalf("err %v, want SQLSTATE %s", err, tt.code)
			}
		})
	}

	// A principal without a password logs in with a token.
	c, err = connect("tokenonly", f.PrincipalToken(t, "tokenonly"))
	if err != nil {
		t.Fatalf("token login: %v", err)
	}
	c.Close(ctx)

	// A disabled principal cannot log in with its password.
	if err := f.App.Store().SetPrincipalDisabled(ctx, "analyst", true); err != nil {
		t.Fatal(err)
	}
	if c, err := connect("analyst", "correct horse battery staple"); err == nil {
		c.Close(ctx)
		t.Fatal("a disabled principal logged in with its password")
	}
}
