package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/floe-lake/floe/websession"
)

var _ websession.Store = (*Store)(nil)

const consoleSessionColumns = "id_hash, principal, sealed_token, token_id, client_id, principal_id, expires_at, created_at"

func scanConsoleSession(scan func(...any) error) (websession.Session, error) {
	var s websession.Session
	var exp, created dbTime
	if err := scan(&s.IDHash, &s.Principal, &s.SealedToken, &s.TokenID, &s.ClientID, &s.PrincipalID, &exp, &created); err != nil {
		return websession.Session{}, err
	}
	s.ExpiresAt, s.CreatedAt = exp.t, created.t
	return s, nil
}

// CreateConsoleSession stores a console session, deleting the expired ones
// and, while max are held, the one expiring first, which it returns. The
// count is taken under a lock row, so that sign-ins on several nodes keep
// the bound together.
func (s *Store) CreateConsoleSession(ctx context.Context, cs websession.Session, max int) ([]websession.Session, error) {
	var evicted []websession.Session
	err := s.write(ctx, "create console session", func(c conn) error {
		evicted = evicted[:0]
		if _, err := c.exec(ctx, "UPDATE console_session_lock SET id = 1 WHERE id = 1"); err != nil {
			return err
		}
		if _, err := c.exec(ctx, "DELETE FROM console_sessions WHERE expires_at <= ?", s.d.timeArg(s.now())); err != nil {
			return err
		}
		if max > 0 {
			var n int
			if err := c.queryRow(ctx, "SELECT COUNT(*) FROM console_sessions").Scan(&n); err != nil {
				return err
			}
			if n >= max {
				rows, err := c.query(ctx, "SELECT "+consoleSessionColumns+" FROM console_sessions ORDER BY expires_at, id_hash LIMIT ?", n-max+1)
				if err != nil {
					return err
				}
				for rows.Next() {
					o, err := scanConsoleSession(rows.Scan)
					if err != nil {
						rows.Close()
						return err
					}
					evicted = append(evicted, o)
				}
				if err := errors.Join(rows.Err(), rows.Close()); err != nil {
					return err
				}
				for _, o := range evicted {
					if _, err := c.exec(ctx, "DELETE FROM console_sessions WHERE id_hash = ?", o.IDHash); err != nil {
						return err
					}
				}
			}
		}
		_, err := c.exec(ctx, "INSERT INTO console_sessions ("+consoleSessionColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			cs.IDHash, cs.Principal, cs.SealedToken, cs.TokenID, cs.ClientID, cs.PrincipalID, s.d.timeArg(cs.ExpiresAt), s.d.timeArg(cs.CreatedAt))
		return err
	})
	if err != nil {
		return nil, err
	}
	return evicted, nil
}

// ConsoleSession returns the live console session with idHash.
func (s *Store) ConsoleSession(ctx context.Context, idHash string) (websession.Session, error) {
	cs, err := scanConsoleSession(s.read().queryRow(ctx, "SELECT "+consoleSessionColumns+" FROM console_sessions WHERE id_hash = ? AND expires_at > ?",
		idHash, s.d.timeArg(s.now())).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return websession.Session{}, websession.ErrNoSession
	}
	if err != nil {
		return websession.Session{}, s.fail("console session", err)
	}
	return cs, nil
}

// DeleteConsoleSession deletes the console session with idHash and returns
// it.
func (s *Store) DeleteConsoleSession(ctx context.Context, idHash string) (websession.Session, error) {
	var cs websession.Session
	err := s.write(ctx, "delete console session", func(c conn) error {
		var err error
		cs, err = scanConsoleSession(c.queryRow(ctx, "SELECT "+consoleSessionColumns+" FROM console_sessions WHERE id_hash = ?", idHash).Scan)
		if errors.Is(err, sql.ErrNoRows) {
			return websession.ErrNoSession
		}
		if err != nil {
			return err
		}
		_, err = c.exec(ctx, "DELETE FROM console_sessions WHERE id_hash = ?", idHash)
		return err
	})
	return cs, err
}
