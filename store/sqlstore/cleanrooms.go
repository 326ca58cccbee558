package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/cleanroom"
)

var _ cleanroom.Store = (*Store)(nil)

// cleanroomsLockKey is the PostgreSQL advisory lock that serializes the
// creation of collaborations ("clrm" in ASCII), so that concurrent
// creations on several nodes cannot overshoot the limit.
const cleanroomsLockKey = 0x636c726d

func noCollaboration(name string) error {
	return floe.E(floe.NotFound, "collaboration", "collaboration %q does not exist", name)
}

// PutCollaboration implements cleanroom.Store.
func (s *Store) PutCollaboration(ctx context.Context, c cleanroom.Collaboration, max int) error {
	spec, err := json.Marshal(c)
	if err != nil {
		return floe.Wrap(floe.Internal, err, "encode collaboration")
	}
	err = s.write(ctx, "store collaboration", func(cn conn) error {
		if c.Version == 1 {
			if s.d.name == DialectPostgres {
				if _, err := cn.exec(ctx, "SELECT pg_advisory_xact_lock(?)", int64(cleanroomsLockKey)); err != nil {
					return err
				}
			}
			var exists int
			err := cn.queryRow(ctx, "SELECT 1 FROM cleanrooms WHERE name = ?", c.Name).Scan(&exists)
			if err == nil {
				return floe.E(floe.AlreadyExists, "collaboration", "collaboration %q already exists", c.Name)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			n, err := count(ctx, cn, "SELECT COUNT(*) FROM cleanrooms")
			if err != nil {
				return err
			}
			if n >= max {
				return floe.E(floe.Unprocessable, "collaboration", "limit reached: at most %d collaborations on this server", max)
			}
			_, err = cn.exec(ctx, "INSERT INTO cleanrooms (name, version, spec, created_by, created_at) VALUES (?, ?, ?, ?, ?)",
				c.Name, c.Version, string(spec), c.Creator, s.d.timeArg(c.CreatedAt))
			return err
		}
		n, err := cn.exec(ctx, "UPDATE cleanrooms SET version = ?, spec = ? WHERE name = ? AND version = ?", c.Version, string(spec), c.Name, c.Version-1)
		if err != nil {
			return err
		}
		if n == 0 {
			var exists int
			if err := cn.queryRow(ctx, "SELECT 1 FROM cleanrooms WHERE name = ?", c.Name).Scan(&exists); errors.Is(err, sql.ErrNoRows) {
				return noCollaboration(c.Name)
			}
			return floe.E(floe.Conflict, "collaboration", "collaboration %q changed concurrently: read it again", c.Name)
		}
		return nil
	})
	if uniqueViolation(err) {
		return floe.E(floe.AlreadyExists, "collaboration", "collaboration %q already exists", c.Name)
	}
	return err
}

func decodeCollaboration(spec string) (cleanroom.Collaboration, error) {
	var c cleanroom.Collaboration
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		return c, floe.Wrap(floe.Internal, err, "decode stored collaboration")
	}
	return c, nil
}

// Collaboration implements cleanroom.Store.
func (s *Store) Collaboration(ctx context.Context, name string) (cleanroom.Collaboration, error) {
	var spec string
	err := s.read().queryRow(ctx, "SELECT spec FROM cleanrooms WHERE name = ?", name).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) {
		return cleanroom.Collaboration{}, noCollaboration(name)
	}
	if err != nil {
		return cleanroom.Collaboration{}, s.fail("collaboration", err)
	}
	return decodeCollaboration(spec)
}

// Collaborations implements cleanroom.Store.
func (s *Store) Collaborations(ctx context.Context) ([]cleanroom.Collaboration, error) {
	out := []cleanroom.Collaboration{}
	err := each(ctx, s.read(), "SELECT spec FROM cleanrooms ORDER BY name", func(scan func(...any) error) error {
		var spec string
		if err := scan(&spec); err != nil {
			return err
		}
		c, err := decodeCollaboration(spec)
		out = append(out, c)
		return err
	})
	if err != nil {
		return nil, s.fail("list collaborations", err)
	}
	return out, nil
}

// DropCollaboration implements cleanroom.Store.
func (s *Store) DropCollaboration(ctx context.Context, name string) error {
	return s.write(ctx, "drop collaboration", func(c conn) error {
		n, err := c.exec(ctx, "DELETE FROM cleanrooms WHERE name = ?", name)
		if err != nil {
			return err
		}
		if n == 0 {
			return noCollaboration(name)
		}
		if _, err := c.exec(ctx, "DELETE FROM cleanroom_budgets WHERE collaboration = ?", name); err != nil {
			return err
		}
		if _, err := c.exec(ctx, "DELETE FROM cleanroom_templates WHERE collaboration = ?", name); err != nil {
			return err
		}
		_, err = c.exec(ctx, "DELETE FROM cleanroom_queries WHERE collaboration = ?", name)
		return err
	})
}

// AddCleanRoomQuery implements cleanroom.Store.
func (s *Store) AddCleanRoomQuery(ctx context.Context, r cleanroom.QueryRecord, keep int) error {
	rec, err := json.Marshal(r)
	if err != nil {
		return floe.Wrap(floe.Internal, err, "encode clean room query")
	}
	return s.write(ctx, "log clean room query", func(c conn) error {
		if _, err := c.exec(ctx, "INSERT INTO cleanroom_queries (id, collaboration, at, record) VALUES (?, ?, ?, ?)",
			r.ID, r.Collaboration, s.d.timeArg(r.At), string(rec)); err != nil {
			return err
		}
		_, err := c.exec(ctx, "DELETE FROM cleanroom_queries WHERE collaboration = ? AND id NOT IN "+
			"(SELECT id FROM cleanroom_queries WHERE collaboration = ? ORDER BY at DESC, id DESC LIMIT ?)",
			r.Collaboration, r.Collaboration, keep)
		return err
	})
}

// CleanRoomQueries implements cleanroom.Store.
func (s *Store) CleanRoomQueries(ctx context.Context, name string, limit int) ([]cleanroom.QueryRecord, error) {
	out := []cleanroom.QueryRecord{}
	err := each(ctx, s.read(), "SELECT record FROM cleanroom_queries WHERE collaboration = ? ORDER BY at DESC, id DESC LIMIT ?", func(scan func(...any) error) error {
		var rec string
		if err := scan(&rec); err != nil {
			return err
		}
		var r cleanroom.QueryRecord
		if err := json.Unmarshal([]byte(rec), &r); err != nil {
			return floe.Wrap(floe.Internal, err, "decode stored clean room query")
		}
		out = append(out, r)
		return nil
	}, name, limit)
	if err != nil {
		return nil, s.fail("clean room queries", err)
	}
	return out, nil
}

var _ cleanroom.TemplateStore = (*Store)(nil)

func noTemplate(collab, name string) error {
	return floe.E(floe.NotFound, "collaboration", "collaboration %q has no template %q", collab, name)
}

// PutTemplate implements cleanroom.TemplateStore.
func (s *Store) PutTemplate(ctx context.Context, t cleanroom.Template, max int) error {
	spec, err := json.Marshal(t)
	if err != nil {
		return floe.Wrap(floe.Internal, err, "encode template")
	}
	err = s.write(ctx, "store template", func(cn conn) error {
		if t.Version == 1 {
			if s.d.name == DialectPostgres {
				if _, err := cn.exec(ctx, "SELECT pg_advisory_xact_lock(?)", int64(cleanroomsLockKey)); err != nil {
					return err
				}
			}
			exists, err := cn.exists(ctx, "SELECT 1 FROM cleanroom_templates WHERE collaboration = ? AND name = ?", t.Collaboration, t.Name)
			if err != nil {
				return err
			}
			if exists {
				return floe.E(floe.AlreadyExists, "collaboration", "collaboration %q already has a template %q", t.Collaboration, t.Name)
			}
			n, err := count(ctx, cn, "SELECT COUNT(*) FROM cleanroom_templates WHERE collaboration = ?", t.Collaboration)
			if err != nil {
				return err
			}
			if n >= max {
				return floe.E(floe.Unprocessable, "collaboration", "limit reached: at most %d templates per collaboration", max)
			}
			_, err = cn.exec(ctx, "INSERT INTO cleanroom_templates (collaboration, name, version, spec) VALUES (?, ?, ?, ?)",
				t.Collaboration, t.Name, t.Version, string(spec))
			return err
		}
		n, err := cn.exec(ctx, "UPDATE cleanroom_templates SET version = ?, spec = ? WHERE collaboration = ? AND name = ? AND version = ?",
			t.Version, string(spec), t.Collaboration, t.Name, t.Version-1)
		if err != nil {
			return err
		}
		if n == 0 {
			exists, err := cn.exists(ctx, "SELECT 1 FROM cleanroom_templates WHERE collaboration = ? AND name = ?", t.Collaboration, t.Name)
			if err != nil {
				return err
			}
			if !exists {
				return noTemplate(t.Collaboration, t.Name)
			}
			return floe.E(floe.Conflict, "collaboration", "template %q changed concurrently: read it again", t.Name)
		}
		return nil
	})
	if uniqueViolation(err) {
		return floe.E(floe.AlreadyExists, "collaboration", "collaboration %q already has a template %q", t.Collaboration, t.Name)
	}
	return err
}

func decodeTemplate(spec string) (cleanroom.Template, error) {
	var t cleanroom.Template
	if err := json.Unmarshal([]byte(spec), &t); err != nil {
		return t, floe.Wrap(floe.Internal, err, "decode stored template")
	}
	return t, nil
}

// Template implements cleanroom.TemplateStore.
func (s *Store) Template(ctx context.Context, collab, name string) (cleanroom.Template, error) {
	var spec string
	err := s.read().queryRow(ctx, "SELECT spec FROM cleanroom_templates WHERE collaboration = ? AND name = ?", collab, name).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) {
		return cleanroom.Template{}, noTemplate(collab, name)
	}
	if err != nil {
		return cleanroom.Template{}, s.fail("template", err)
	}
	return decodeTemplate(spec)
}

// Templates implements cleanroom.TemplateStore.
func (s *Store) Templates(ctx context.Context, collab string) ([]cleanroom.Template, error) {
	out := []cleanroom.Template{}
	err := each(ctx, s.read(), "SELECT spec FROM cleanroom_templates WHERE collaboration = ? ORDER BY name", func(scan func(...any) error) error {
		var spec string
		if err := scan(&spec); err != nil {
			return err
		}
		t, err := decodeTemplate(spec)
		out = append(out, t)
		return err
	}, collab)
	if err != nil {
		return nil, s.fail("list templates", err)
	}
	return out, nil
}

// DropTemplate implements cleanroom.TemplateStore.
func (s *Store) DropTemplate(ctx context.Context, collab, name string) error {
	return s.write(ctx, "drop template", func(c conn) error {
		n, err := c.exec(ctx, "DELETE FROM cleanroom_templates WHERE collaboration = ? AND name = ?", collab, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return noTemplate(collab, name)
		}
		return nil
	})
}
