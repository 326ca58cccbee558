package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/federation"
)

var _ federation.Store = (*Store)(nil)

// federationLockKey is the PostgreSQL advisory lock that serializes the
// creation of foreign catalogs ("fedc" in ASCII), so that concurrent
// creates on several nodes cannot overshoot the limit.
const federationLockKey = 0x66656463

const foreignCatalogColumns = "id, name, type, uri, warehouse, auth, client_id, scope, token_url, cache_ttl_ms, secret_env, secret, created_by, created_at, " +
	"region, signing_name, role_arn, external_id, writes, write_client_id, write_role_arn, write_external_id, write_secret_env, write_secret"

func scanForeignCatalog(scan func(...any) error) (federation.Record, error) {
	var r federation.Record
	var ttl int64
	var at dbTime
	err := scan(&r.ID, &r.Name, &r.Type, &r.URI, &r.Warehouse, &r.Auth, &r.ClientID, &r.Scope, &r.TokenURL, &ttl,
		&r.SecretEnv, &r.SealedSecret, &r.CreatedBy, &at, &r.Region, &r.SigningName, &r.RoleARN, &r.ExternalID, &r.Writes,
		&r.WriteClientID, &r.WriteRoleARN, &r.WriteExternalID, &r.WriteSecretEnv, &r.SealedWriteSecret)
	r.CacheTTL, r.CreatedAt = time.Duration(ttl)*time.Millisecond, at.t
	return r, err
}

// CreateForeignCatalog implements federation.Store.
func (s *Store) CreateForeignCatalog(ctx context.Context, r federation.Record, max int) error {
	return s.write(ctx, "create foreign catalog", func(c conn) error {
		if s.d.name == DialectPostgres {
			if _, err := c.exec(ctx, "SELECT pg_advisory_xact_lock(?)", int64(federationLockKey)); err != nil {
				return err
			}
		}
		taken, err := c.exists(ctx, "SELECT 1 FROM foreign_catalogs WHERE name_key = ?", strings.ToLower(r.Name))
		if err != nil {
			return err
		}
		if taken {
			return floe.E(floe.AlreadyExists, "foreign catalog", "foreign catalog %q already exists", r.Name)
		}
		n, err := count(ctx, c, "SELECT COUNT(*) FROM foreign_catalogs")
		if err != nil {
			return err
		}
		if n >= max {
			return floe.E(floe.Unprocessable, "foreign catalog", "limit reached: at most %d foreign catalogs created at run time", max)
		}
		secret, writeSecret := r.SealedSecret, r.SealedWriteSecret
		if secret == nil {
			secret = []byte{}
		}
		if writeSecret == nil {
			writeSecret = []byte{}
		}
		_, err = c.exec(ctx, "INSERT INTO foreign_catalogs ("+foreignCatalogColumns+", name_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			r.ID, r.Name, r.Type, r.URI, r.Warehouse, r.Auth, r.ClientID, r.Scope, r.TokenURL, r.CacheTTL.Milliseconds(),
			r.SecretEnv, secret, r.CreatedBy, s.d.timeArg(r.CreatedAt),
			r.Region, r.SigningName, r.RoleARN, r.ExternalID, r.Writes, r.WriteClientID, r.WriteRoleARN, r.WriteExternalID,
			r.WriteSecretEnv, writeSecret, strings.ToLower(r.Name))
		return err
	})
}

// ForeignCatalog implements federation.Store.
func (s *Store) ForeignCatalog(ctx context.Context, name string) (federation.Record, error) {
	r, err := scanForeignCatalog(s.read().queryRow(ctx, "SELECT "+foreignCatalogColumns+" FROM foreign_catalogs WHERE name_key = ?", strings.ToLower(name)).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return federation.Record{}, floe.E(floe.NotFound, "foreign catalog", "foreign catalog %q does not exist", name)
	}
	if err != nil {
		return federation.Record{}, s.fail("foreign catalog", err)
	}
	return r, nil
}

// ListForeignCatalogs implements federation.Store.
func (s *Store) ListForeignCatalogs(ctx context.Context) ([]federation.Record, error) {
	out := []federation.Record{}
	err := each(ctx, s.read(), "SELECT "+foreignCatalogColumns+" FROM foreign_catalogs ORDER BY name_key", func(scan func(...any) error) error {
		r, err := scanForeignCatalog(scan)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, s.fail("list foreign catalogs", err)
	}
	return out, nil
}

// DropForeignCatalog implements federation.Store.
func (s *Store) DropForeignCatalog(ctx context.Context, name string) error {
	return s.write(ctx, "drop foreign catalog", func(c conn) error {
		n, err := c.exec(ctx, "DELETE FROM foreign_catalogs WHERE name_key = ?", strings.ToLower(name))
		if err != nil {
			return err
		}
		if n == 0 {
			return floe.E(floe.NotFound, "foreign catalog", "foreign catalog %q does not exist", name)
		}
		return nil
	})
}

// ReplaceForeignCatalogSecret sets the stored (sealed) secret of foreign
// catalog id to new if it is still old, and reports whether it did (see
// ReplaceSigningKey).
func (s *Store) ReplaceForeignCatalogSecret(ctx context.Context, id string, old, new []byte) (bool, error) {
	return s.replaceBlob(ctx, "replace foreign catalog secret", "UPDATE foreign_catalogs SET secret = ? WHERE id = ? AND secret = ?", id, old, new)
}

// ReplaceForeignCatalogWriteSecret sets the stored (sealed) write secret
// of foreign catalog id to new if it is still old, and reports whether it
// did (see ReplaceSigningKey).
func (s *Store) ReplaceForeignCatalogWriteSecret(ctx context.Context, id string, old, new []byte) (bool, error) {
	return s.replaceBlob(ctx, "replace foreign catalog write secret", "UPDATE foreign_catalogs SET write_secret = ? WHERE id = ? AND write_secret = ?", id, old, new)
}
