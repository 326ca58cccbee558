package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/auth"
)

// SetPrincipalPassword stores the SQL password verifier of the principal
// named name, replacing any earlier one; an empty verifier removes it.
// NotFound if the principal does not exist.
func (s *Store) SetPrincipalPassword(ctx context.Context, name, verifier string) error {
	return s.write(ctx, "set principal password", func(c conn) error {
		var id string
		if err := c.queryRow(ctx, "SELECT id FROM principals WHERE name = ?"+s.d.forUpdate, name).Scan(&id); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return floe.E(floe.NotFound, "principal", "Principal does not exist: %s", name)
			}
			return err
		}
		if verifier == "" {
			_, err := c.exec(ctx, "DELETE FROM principal_passwords WHERE principal_id = ?", id)
			return err
		}
		_, err := c.exec(ctx, `INSERT INTO principal_passwords (principal_id, verifier, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (principal_id) DO UPDATE SET verifier = excluded.verifier, updated_at = excluded.updated_at`,
			id, verifier, s.d.timeArg(s.now()))
		return err
	})
}

// PrincipalPassword returns the principal named name and its SQL password
// verifier: NotFound if the principal does not exist or has no password.
func (s *Store) PrincipalPassword(ctx context.Context, name string) (auth.Principal, string, error) {
	var verifier string
	cols := "p." + strings.ReplaceAll(principalColumns, ", ", ", p.")
	row := s.read().queryRow(ctx, "SELECT "+cols+", w.verifier FROM principals p JOIN principal_passwords w ON w.principal_id = p.id WHERE p.name = ?", name)
	p, err := scanPrincipalWith(row.Scan, &verifier)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Principal{}, "", floe.E(floe.NotFound, "password", "Principal %s has no SQL password", name)
	}
	if err != nil {
		return auth.Principal{}, "", s.fail("principal password", err)
	}
	return p, verifier, nil
}
