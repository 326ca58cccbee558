package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/revoke"
	"github.com/floe-lake/floe/sharing"
)

var _ sharing.Store = (*Store)(nil)

// sharingLockKey is the PostgreSQL advisory lock that serializes the
// sharing writes that check a limit ("shar" in ASCII), so that concurrent
// creates on several nodes cannot overshoot it.
const sharingLockKey = 0x73686172

// lockSharing takes the sharing lock in a write transaction (PostgreSQL;
// SQLite has a single writer already).
func (s *Store) lockSharing(ctx context.Context, c conn) error {
	if s.d.name != DialectPostgres {
		return nil
	}
	_, err := c.exec(ctx, "SELECT pg_advisory_xact_lock(?)", int64(sharingLockKey))
	return err
}

// nullTime is the stored form of an optional time (NULL for zero).
func (s *Store) nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.d.timeArg(t)
}

// limitReached is the error of a sharing limit.
func limitReached(what string, limit int, setting string) error {
	return floe.E(floe.Unprocessable, what, "limit reached: at most %d %s (setting %s)", limit, what, setting)
}

// count returns the integer of a COUNT query.
func count(ctx context.Context, c conn, query string, args ...any) (int, error) {
	var n int
	err := c.queryRow(ctx, query, args...).Scan(&n)
	return n, err
}

const shareColumns = "id, name, warehouse, owner, comment, created_at"

func scanShare(scan func(...any) error) (sharing.ShareInfo, error) {
	var sh sharing.ShareInfo
	var at dbTime
	err := scan(&sh.ID, &sh.Name, &sh.Warehouse, &sh.Owner, &sh.Comment, &at)
	sh.CreatedAt = at.t
	return sh, err
}

// CreateShare implements sharing.Store.
func (s *Store) CreateShare(ctx context.Context, sh sharing.ShareInfo, maxShares int) error {
	return s.write(ctx, "create share", func(c conn) error {
		if err := s.lockSharing(ctx, c); err != nil {
			return err
		}
		taken, err := c.exists(ctx, "SELECT 1 FROM shares WHERE name_key = ?", strings.ToLower(sh.Name))
		if err != nil {
			return err
		}
		if taken {
			return floe.E(floe.AlreadyExists, "share", "share %q already exists", sh.Name)
		}
		n, err := count(ctx, c, "SELECT COUNT(*) FROM shares")
		if err != nil {
			return err
		}
		if n >= maxShares {
			return limitReached("shares", maxShares, "sharing.max_shares")
		}
		_, err = c.exec(ctx, "INSERT INTO shares (id, name, name_key, warehouse, owner, comment, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
			sh.ID, sh.Name, strings.ToLower(sh.Name), sh.Warehouse, sh.Owner, sh.Comment, s.d.timeArg(sh.CreatedAt))
		return err
	})
}

// ShareByName implements sharing.Store.
func (s *Store) ShareByName(ctx context.Context, name string) (sharing.ShareInfo, error) {
	sh, err := scanShare(s.read().queryRow(ctx, "SELECT "+shareColumns+" FROM shares WHERE name_key = ?", strings.ToLower(name)).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return sharing.ShareInfo{}, floe.E(floe.NotFound, "share", "share %q does not exist", name)
	}
	if err != nil {
		return sharing.ShareInfo{}, s.fail("share", err)
	}
	return sh, nil
}

// ListShares implements sharing.Store.
func (s *Store) ListShares(ctx context.Context) ([]sharing.ShareInfo, error) {
	out := []sharing.ShareInfo{}
	err := each(ctx, s.read(), "SELECT "+shareColumns+" FROM shares ORDER BY name_key", func(scan func(...any) error) error {
		sh, err := scanShare(scan)
		out = append(out, sh)
		return err
	})
	if err != nil {
		return nil, s.fail("list shares", err)
	}
	return out, nil
}

// DropShare implements sharing.Store.
func (s *Store) DropShare(ctx context.Context, shareID string, revokePrincipals []string) error {
	return s.write(ctx, "drop share", func(c conn) error {
		if _, err := c.exec(ctx, "DELETE FROM share_objects WHERE share_id = ?", shareID); err != nil {
			return err
		}
		if _, err := c.exec(ctx, "DELETE FROM share_grants WHERE share_id = ?", shareID); err != nil {
			return err
		}
		n, err := c.exec(ctx, "DELETE FROM shares WHERE id = ?", shareID)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "share", "share %s does not exist", shareID)
		}
		return s.revokePrincipals(ctx, c, revokePrincipals)
	})
}

const objectColumns = "id, share_id, kind, namespace, name, alias_schema, alias_name, history, partition_filter, added_by, created_at"

func scanObject(scan func(...any) error) (sharing.Object, error) {
	var o sharing.Object
	var kind, ns string
	var at dbTime
	err := scan(&o.ID, &o.ShareID, &kind, &ns, &o.Name, &o.AliasSchema, &o.AliasName, &o.History, &o.PartitionFilter, &o.AddedBy, &at)
	o.Kind, o.Namespace, o.CreatedAt = sharing.ObjectKind(kind), catalog.ParseNamespaceKey(ns), at.t
	return o, err
}

// AddShareObject implements sharing.Store.
func (s *Store) AddShareObject(ctx context.Context, o sharing.Object, maxObjects int) error {
	return s.write(ctx, "add share object", func(c conn) error {
		if err := s.lockSharing(ctx, c); err != nil {
			return err
		}
		ok, err := c.exists(ctx, "SELECT 1 FROM shares WHERE id = ?", o.ShareID)
		if err != nil {
			return err
		}
		if !ok {
			return floe.E(floe.NotFound, "share", "share %s does not exist", o.ShareID)
		}
		n, err := count(ctx, c, "SELECT COUNT(*) FROM share_objects WHERE share_id = ?", o.ShareID)
		if err != nil {
			return err
		}
		if n >= maxObjects {
			return limitReached("objects per share", maxObjects, "sharing.max_objects_per_share")
		}
		added, err := c.exec(ctx, "INSERT INTO share_objects ("+objectColumns+", visible_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
			o.ID, o.ShareID, string(o.Kind), o.Namespace.Key(), o.Name, o.AliasSchema, o.AliasName, o.History, o.PartitionFilter,
			o.AddedBy, s.d.timeArg(o.CreatedAt), o.VisibleKey())
		if err != nil {
			return err
		}
		if added == 0 {
			return floe.E(floe.AlreadyExists, "share object", "the share holds that object, or another under the same name, already")
		}
		return nil
	})
}

// RemoveShareObject implements sharing.Store.
func (s *Store) RemoveShareObject(ctx context.Context, shareID, objectID string, revokePrincipals []string) error {
	return s.write(ctx, "remove share object", func(c conn) error {
		n, err := c.exec(ctx, "DELETE FROM share_objects WHERE share_id = ? AND id = ?", shareID, objectID)
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "share object", "share object %s does not exist", objectID)
		}
		return s.revokePrincipals(ctx, c, revokePrincipals)
	})
}

// ShareObjects implements sharing.Store.
func (s *Store) ShareObjects(ctx context.Context, shareID string) ([]sharing.Object, error) {
	var out []sharing.Object
	err := each(ctx, s.read(), "SELECT "+objectColumns+" FROM share_objects WHERE share_id = ? ORDER BY visible_key",
		func(scan func(...any) error) error {
			o, err := scanObject(scan)
			out = append(out, o)
			return err
		}, shareID)
	if err != nil {
		return nil, s.fail("share objects", err)
	}
	return out, nil
}

const recipientColumns = "id, name, owner, comment, properties, allowed_cidrs, expires_at, created_at"

func scanRecipient(scan func(...any) error, extra ...any) (sharing.RecipientInfo, error) {
	var r sharing.RecipientInfo
	var props, cidrs string
	var exp, at dbTime
	if err := scan(append([]any{&r.ID, &r.Name, &r.Owner, &r.Comment, &props, &cidrs, &exp, &at}, extra...)...); err != nil {
		return r, err
	}
	r.ExpiresAt, r.CreatedAt = exp.t, at.t
	if cidrs != "" {
		r.AllowedCIDRs = strings.Split(cidrs, ",")
	}
	if err := json.Unmarshal([]byte(props), &r.Properties); err != nil {
		return r, err
	}
	return r, nil
}

// CreateRecipient implements sharing.Store.
func (s *Store) CreateRecipient(ctx context.Context, r sharing.RecipientInfo, t sharing.TokenInfo, maxRecipients int) error {
	props := r.Properties
	if props == nil {
		props = map[string]string{}
	}
	js, err := json.Marshal(props)
	if err != nil {
		return s.fail("create recipient", err)
	}
	return s.write(ctx, "create recipient", func(c conn) error {
		if err := s.lockSharing(ctx, c); err != nil {
			return err
		}
		taken, err := c.exists(ctx, "SELECT 1 FROM share_recipients WHERE name_key = ?", strings.ToLower(r.Name))
		if err != nil {
			return err
		}
		if taken {
			return floe.E(floe.AlreadyExists, "recipient", "recipient %q already exists", r.Name)
		}
		n, err := count(ctx, c, "SELECT COUNT(*) FROM share_recipients")
		if err != nil {
			return err
		}
		if n >= maxRecipients {
			return limitReached("recipients", maxRecipients, "sharing.max_recipients")
		}
		if _, err := c.exec(ctx, `INSERT INTO share_recipients (id, name, name_key, owner, comment, properties, allowed_cidrs, expires_at, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, r.Name, strings.ToLower(r.Name), r.Owner, r.Comment, string(js),
			strings.Join(r.AllowedCIDRs, ","), s.nullTime(r.ExpiresAt), s.d.timeArg(r.CreatedAt)); err != nil {
			return err
		}
		return s.insertToken(ctx, c, t)
	})
}

func (s *Store) insertToken(ctx context.Context, c conn, t sharing.TokenInfo) error {
	_, err := c.exec(ctx, `INSERT INTO share_recipient_tokens (id, recipient_id, token_hash, created_at, expires_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, NULL)`, t.ID, t.RecipientID, t.Hash, s.d.timeArg(t.CreatedAt), s.nullTime(t.ExpiresAt))
	return err
}

// RecipientByName implements sharing.Store.
func (s *Store) RecipientByName(ctx context.Context, name string) (sharing.RecipientInfo, error) {
	r, err := scanRecipient(s.read().queryRow(ctx, "SELECT "+recipientColumns+" FROM share_recipients WHERE name_key = ?", strings.ToLower(name)).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return sharing.RecipientInfo{}, floe.E(floe.NotFound, "recipient", "recipient %q does not exist", name)
	}
	if err != nil {
		return sharing.RecipientInfo{}, s.fail("recipient", err)
	}
	return r, nil
}

// ListRecipients implements sharing.Store.
func (s *Store) ListRecipients(ctx context.Context) ([]sharing.RecipientInfo, error) {
	out := []sharing.RecipientInfo{}
	err := each(ctx, s.read(), "SELECT "+recipientColumns+" FROM share_recipients ORDER BY name_key", func(scan func(...any) error) error {
		r, err := scanRecipient(scan)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, s.fail("list recipients", err)
	}
	return out, nil
}

// RotateToken implements sharing.Store.
func (s *Store) RotateToken(ctx context.Context, t sharing.TokenInfo, graceEnd time.Time, maxTokens int) error {
	return s.write(ctx, "rotate recipient token", func(c conn) error {
		if err := s.lockSharing(ctx, c); err != nil {
			return err
		}
		ok, err := c.exists(ctx, "SELECT 1 FROM share_recipients WHERE id = ?", t.RecipientID)
		if err != nil {
			return err
		}
		if !ok {
			return floe.E(floe.NotFound, "recipient", "recipient %s does not exist", t.RecipientID)
		}
		now := s.now()
		nowArg := s.d.timeArg(now)
		// Dead tokens are of no use any more: keep the table bounded.
		if _, err := c.exec(ctx, `DELETE FROM share_recipient_tokens WHERE recipient_id = ?
			AND (revoked_at IS NOT NULL OR (expires_at IS NOT NULL AND expires_at <= ?))`, t.RecipientID, nowArg); err != nil {
			return err
		}
		if !graceEnd.After(now) {
			if _, err := s.revokeTokensIn(ctx, c, t.RecipientID, ""); err != nil {
				return err
			}
		} else if _, err := c.exec(ctx, `UPDATE share_recipient_tokens SET expires_at = ?
			WHERE recipient_id = ? AND (expires_at IS NULL OR expires_at > ?)`, s.d.timeArg(graceEnd), t.RecipientID, s.d.timeArg(graceEnd)); err != nil {
			return err
		}
		n, err := count(ctx, c, `SELECT COUNT(*) FROM share_recipient_tokens WHERE recipient_id = ? AND revoked_at IS NULL
			AND (expires_at IS NULL OR expires_at > ?)`, t.RecipientID, nowArg)
		if err != nil {
			return err
		}
		if n >= maxTokens {
			return limitReached("tokens per recipient", maxTokens, "sharing.max_tokens_per_recipient")
		}
		return s.insertToken(ctx, c, t)
	})
}

// RevokeTokens implements sharing.Store.
func (s *Store) RevokeTokens(ctx context.Context, recipientID, tokenID string) ([]string, error) {
	var ids []string
	err := s.write(ctx, "revoke recipient tokens", func(c conn) error {
		var err error
		ids, err = s.revokeTokensIn(ctx, c, recipientID, tokenID)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return floe.E(floe.NotFound, "token", "the recipient has no live token to revoke")
		}
		return nil
	})
	return ids, err
}

// revokeTokensIn revokes, in a write transaction, the live tokens of a
// recipient (only tokenID when not empty) and records a token revocation
// for each: credentials and URLs carrying their ids are refused on every
// node once it has refreshed its revocations.
func (s *Store) revokeTokensIn(ctx context.Context, c conn, recipientID, tokenID string) ([]string, error) {
	now := s.now()
	q := `SELECT id FROM share_recipient_tokens WHERE recipient_id = ? AND revoked_at IS NULL`
	args := []any{recipientID}
	if tokenID != "" {
		q += " AND id = ?"
		args = append(args, tokenID)
	}
	ids, err := selectNames(ctx, c, q, args...)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, err := c.exec(ctx, "UPDATE share_recipient_tokens SET revoked_at = ? WHERE id = ?", s.d.timeArg(now), id); err != nil {
			return nil, err
		}
		if err := s.revokeIn(ctx, c, revoke.Token, id, now.Add(revocationTTL)); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

const tokenColumns = "t.id, t.recipient_id, t.token_hash, t.created_at, t.expires_at, t.revoked_at"

func scanToken(dst *sharing.TokenInfo) (ptrs []any, done func()) {
	var at, exp, rev dbTime
	return []any{&dst.ID, &dst.RecipientID, &dst.Hash, &at, &exp, &rev}, func() {
		dst.CreatedAt, dst.ExpiresAt, dst.RevokedAt = at.t, exp.t, rev.t
	}
}

// RecipientTokens implements sharing.Store.
func (s *Store) RecipientTokens(ctx context.Context, recipientID string) ([]sharing.TokenInfo, error) {
	out := []sharing.TokenInfo{}
	err := each(ctx, s.read(), "SELECT "+tokenColumns+" FROM share_recipient_tokens t WHERE t.recipient_id = ? ORDER BY t.created_at DESC, t.id",
		func(scan func(...any) error) error {
			var t sharing.TokenInfo
			ptrs, done := scanToken(&t)
			if err := scan(ptrs...); err != nil {
				return err
			}
			done()
			out = append(out, t)
			return nil
		}, recipientID)
	if err != nil {
		return nil, s.fail("recipient tokens", err)
	}
	return out, nil
}

// TokenByHash implements sharing.Store.
func (s *Store) TokenByHash(ctx context.Context, hash string) (sharing.TokenInfo, sharing.RecipientInfo, error) {
	var t sharing.TokenInfo
	ptrs, done := scanToken(&t)
	cols := "r.id, r.name, r.owner, r.comment, r.properties, r.allowed_cidrs, r.expires_at, r.created_at"
	row := s.read().queryRow(ctx, "SELECT "+cols+", "+tokenColumns+` FROM share_recipient_tokens t
		JOIN share_recipients r ON r.id = t.recipient_id WHERE t.token_hash = ?`, hash)
	r, err := scanRecipient(row.Scan, ptrs...)
	if errors.Is(err, sql.ErrNoRows) {
		return sharing.TokenInfo{}, sharing.RecipientInfo{}, floe.E(floe.NotFound, "token", "no such token")
	}
	if err != nil {
		return sharing.TokenInfo{}, sharing.RecipientInfo{}, s.fail("token by hash", err)
	}
	done()
	return t, r, nil
}

// Token implements sharing.Store.
func (s *Store) Token(ctx context.Context, id string) (sharing.TokenInfo, error) {
	var t sharing.TokenInfo
	ptrs, done := scanToken(&t)
	err := s.read().queryRow(ctx, "SELECT "+tokenColumns+" FROM share_recipient_tokens t WHERE t.id = ?", id).Scan(ptrs...)
	if errors.Is(err, sql.ErrNoRows) {
		return sharing.TokenInfo{}, floe.E(floe.NotFound, "token", "no such token")
	}
	if err != nil {
		return sharing.TokenInfo{}, s.fail("token", err)
	}
	done()
	return t, nil
}

// GrantShare implements sharing.Store.
func (s *Store) GrantShare(ctx context.Context, g sharing.GrantInfo) error {
	return s.write(ctx, "grant share", func(c conn) error {
		n, err := c.exec(ctx, `INSERT INTO share_grants (share_id, recipient_id, created_by, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, g.ShareID, g.RecipientID, g.CreatedBy, s.d.timeArg(g.CreatedAt))
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.AlreadyExists, "share grant", "share %q is granted to recipient %q already", g.Share, g.Recipient)
		}
		return nil
	})
}

// RevokeShare implements sharing.Store.
func (s *Store) RevokeShare(ctx context.Context, share, recipient string, revokePrincipals []string) error {
	return s.write(ctx, "revoke share", func(c conn) error {
		n, err := c.exec(ctx, `DELETE FROM share_grants WHERE share_id = (SELECT id FROM shares WHERE name_key = ?)
			AND recipient_id = (SELECT id FROM share_recipients WHERE name_key = ?)`, strings.ToLower(share), strings.ToLower(recipient))
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "share grant", "share %q is not granted to recipient %q", share, recipient)
		}
		return s.revokePrincipals(ctx, c, revokePrincipals)
	})
}

// ShareGrants implements sharing.Store.
func (s *Store) ShareGrants(ctx context.Context, share, recipient string) ([]sharing.GrantInfo, error) {
	q := `SELECT s.id, s.name, r.id, r.name, g.created_by, g.created_at FROM share_grants g
		JOIN shares s ON s.id = g.share_id JOIN share_recipients r ON r.id = g.recipient_id WHERE 1 = 1`
	var args []any
	if share != "" {
		q += " AND s.name_key = ?"
		args = append(args, strings.ToLower(share))
	}
	if recipient != "" {
		q += " AND r.name_key = ?"
		args = append(args, strings.ToLower(recipient))
	}
	q += " ORDER BY s.name_key, r.name_key"
	out := []sharing.GrantInfo{}
	err := each(ctx, s.read(), q, func(scan func(...any) error) error {
		var g sharing.GrantInfo
		var at dbTime
		if err := scan(&g.ShareID, &g.Share, &g.RecipientID, &g.Recipient, &g.CreatedBy, &at); err != nil {
			return err
		}
		g.CreatedAt = at.t
		out = append(out, g)
		return nil
	}, args...)
	if err != nil {
		return nil, s.fail("share grants", err)
	}
	return out, nil
}
