package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/store/sqlstore"
)

// backupCmd is `floe backup`.
func backupCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "backup", Args: cobra.NoArgs,
		Short: "Write a consistent snapshot of the metadata store to a file (the server may keep running)",
		Long: `Write a consistent snapshot of the metadata store (SQLite or PostgreSQL) to a
single portable file: every table's rows, taken in one read transaction while
the server and other nodes keep writing. The file holds the wrapped keys as
stored (sealed, never unwrapped) and the audit chain's head; it restores into
either backend with "floe restore". It does not hold the warehouse's data and
metadata files, nor the warehouse key file or KMS key that unwraps the keys:
see docs/operations.md, "Backup and restore".`}
	load := configFlags(cmd.Flags(), getenv)
	out := cmd.Flags().String("out", "", `file to write ("-" for standard output; s3://bucket/key for an object); written to FILE.tmp and renamed when complete`)
	_ = cmd.MarkFlagRequired("out")
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		cfg, log, err := storeConfig(load, stderr)
		if err != nil {
			return err
		}
		st, err := sqlstore.Open(c.Context(), cfg.Store, sqlstore.Options{Logger: log})
		if err != nil {
			return fmt.Errorf("open store: %w", err)
		}
		defer st.Close()
		start := time.Now()
		w, commit, abort, err := createOutput(c.Context(), cfg, *out, stdout)
		if err != nil {
			return err
		}
		h, tr, err := st.Backup(c.Context(), w, sqlstore.BackupOptions{FloeVersion: ReadBuildInfo().Version})
		if err != nil {
			abort()
			return err
		}
		size, err := commit()
		if err != nil {
			return err
		}
		var rows int64
		for _, n := range tr.Rows {
			rows += n
		}
		// On record in the store itself (after the snapshot, so the file
		// does not hold it).
		if _, err := audit.New(st, audit.Options{}).Append(c.Context(), audit.Event{Principal: "(cli)", Action: "store.backup",
			Resource: "store", Outcome: audit.OutcomeSuccess, Detail: map[string]any{"out": *out, "audit_head_seq": h.AuditHead.Seq,
				"tables": len(tr.Rows), "rows": rows, "sha256": tr.SHA256}}); err != nil {
			return fmt.Errorf("the backup was written, but recording it in the audit log failed: %w", err)
		}
		msg := stdout
		if *out == "-" {
			msg = stderr
		}
		fmt.Fprintf(msg, "backup written to %s: %d tables, %d rows, %d bytes, schema version %d, %s store, audit head %d %s, sha256 %s (%s)\n",
			*out, len(tr.Rows), rows, size, h.SchemaVersion, h.Dialect, h.AuditHead.Seq, h.AuditHead.Hash, tr.SHA256,
			time.Since(start).Round(time.Millisecond))
		return nil
	}
	return cmd
}

// restoreCmd is `floe restore`.
func restoreCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "restore", Args: cobra.NoArgs,
		Short: "Restore the metadata store from a backup file, then verify the audit chain",
		Long: `Restore the metadata store named by the configuration (SQLite or PostgreSQL,
whichever the backup came from) from a file written by "floe backup". Stop
every node on the store first. The store must be empty (a new SQLite file or
PostgreSQL schema) unless --force, which replaces its contents. The restore is
one transaction: a damaged, truncated or modified file (its SHA-256 and row
counts are checked), or one from a newer floe, changes nothing. Newer schema
migrations of this binary are applied after the rows are loaded. Afterwards it
opens the store with the configured key wrapper, which must be the one the
backup's keys were sealed under (the same warehouse key file or KMS key), and
verifies the audit chain.`}
	load := configFlags(cmd.Flags(), getenv)
	in := cmd.Flags().String("in", "", `backup file to read ("-" for standard input; s3://bucket/key for an object)`)
	force := cmd.Flags().Bool("force", false, "replace the contents of a store that is not empty")
	_ = cmd.MarkFlagRequired("in")
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		cfg, log, err := storeConfig(load, stderr)
		if err != nil {
			return err
		}
		if err := checkKeyFile(cfg); err != nil {
			return err
		}
		var r io.Reader = c.InOrStdin()
		switch {
		case strings.HasPrefix(*in, "s3://"):
			body, err := openS3(c.Context(), cfg, *in)
			if err != nil {
				return err
			}
			defer body.Close()
			r = body
		case *in != "-":
			f, err := os.Open(*in)
			if err != nil {
				return fmt.Errorf("backup file: %w", err)
			}
			defer f.Close()
			r = f
		}
		st, err := sqlstore.Open(c.Context(), cfg.Store, sqlstore.Options{Logger: log})
		if err != nil {
			return fmt.Errorf("open store: %w", err)
		}
		start := time.Now()
		res, err := st.Restore(c.Context(), r, sqlstore.RestoreOptions{Force: *force})
		_ = st.Close()
		if err != nil {
			return err
		}
		h := res.Header
		fmt.Fprintf(stdout, "restored %d tables, %d rows from a %s backup of %s (floe %s, schema version %d, now %d) in %s\n",
			res.Tables, res.Rows, h.Dialect, h.CreatedAt.Format(time.RFC3339), h.FloeVersion, h.SchemaVersion, res.SchemaVersion,
			time.Since(start).Round(time.Millisecond))
		// Open the whole server state: the keys must unwrap under the
		// configured key wrapper, and the audit chain must verify.
		a, err := app.Open(c.Context(), cfg, log)
		if err != nil {
			return fmt.Errorf("the store was restored, but floe cannot open it (is the key file or KMS key the one of the backup's source?): %w", err)
		}
		defer a.Close(context.Background())
		vr, err := a.Audit().VerifyChain(c.Context())
		if err != nil {
			return fmt.Errorf("the store was restored, but its audit chain does not verify: %w", err)
		}
		if vr.Last != h.AuditHead.Seq || (vr.Last > 0 && vr.Head != h.AuditHead.Hash) {
			return fmt.Errorf("the store was restored, but its audit head %d %s is not the backup's %d %s", vr.Last, vr.Head, h.AuditHead.Seq, h.AuditHead.Hash)
		}
		fmt.Fprintf(stdout, "audit log intact: %d records, head %d %s\n", vr.Records, vr.Last, vr.Head)
		// Warehouse checkpoints written after the backup seal records the
		// restore rewound: move them aside (they would report those records
		// as deleted, and their names are the seqs the next records take),
		// then check the ones kept against the restored log.
		detail := map[string]any{"backup_created_at": h.CreatedAt.Format(time.RFC3339Nano),
			"backup_dialect": h.Dialect, "backup_floe_version": h.FloeVersion, "backup_schema_version": h.SchemaVersion,
			"backup_audit_head_seq": h.AuditHead.Seq, "tables": res.Tables, "rows": res.Rows, "forced": *force}
		if objs, err := a.SealObjects(c.Context()); err != nil {
			fmt.Fprintf(stderr, "warning: the warehouse audit checkpoints were not checked: %v\n", err)
		} else {
			dir := "restore-" + start.UTC().Format("20060102T150405Z")
			rr, err := audit.RetireSealsAfter(c.Context(), objs, vr.Last, dir)
			if rr.Count > 0 {
				fmt.Fprintf(stdout, "retired %d warehouse audit checkpoints of records %d-%d, written after the backup, to %s%s/\n",
					rr.Count, rr.First, rr.Last, audit.RetiredSealPrefix, dir)
				detail["retired_checkpoints"], detail["retired_from_seq"], detail["retired_to_seq"] = rr.Count, rr.First, rr.Last
				detail["retired_to"] = audit.RetiredSealPrefix + dir + "/"
			}
			if err != nil {
				fmt.Fprintf(stderr, "warning: %v (move the checkpoints of records after %d out of %s by hand; see docs/operations.md, \"Backup and restore\")\n",
					err, vr.Last, audit.SealPrefix)
			} else if _, _, err := a.Audit().VerifySeals(c.Context(), objs); err != nil {
				fmt.Fprintf(stderr, "warning: the warehouse holds audit checkpoints that disagree with the restored log "+
					"(was the backup taken from another deployment?): %v\n", err)
			}
		}
		if _, err := a.Audit().Append(c.Context(), audit.Event{Principal: "(cli)", Action: "store.restore", Resource: "store",
			Outcome: audit.OutcomeSuccess, Detail: detail}); err != nil {
			return fmt.Errorf("record the restore in the audit log: %w", err)
		}
		return nil
	}
	return cmd
}

// storeConfig loads the configuration with its derived defaults and a
// logger, for commands that open only the store.
func storeConfig(load func() (app.Config, error), stderr io.Writer) (app.Config, *slog.Logger, error) {
	cfg, err := load()
	if err != nil {
		return cfg, nil, err
	}
	if err := cfg.Finish(); err != nil {
		return cfg, nil, err
	}
	log, err := newLogger(cfg, stderr)
	if err != nil {
		return cfg, nil, err
	}
	return cfg, log, nil
}

// checkKeyFile refuses to restore when the local key wrapper's key file is
// missing: opening the store would create a new key, which cannot unwrap
// the restored keys.
func checkKeyFile(cfg app.Config) error {
	if cfg.KeyWrapper == "kms" || cfg.EncryptionKey != "" || cfg.EncryptionKeyFile == "" {
		return nil
	}
	if _, err := os.Stat(cfg.EncryptionKeyFile); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the warehouse key file %s does not exist: copy the key file of the backup's source there first "+
			"(the backup's keys are sealed under it; a new key cannot unwrap them)", cfg.EncryptionKeyFile)
	}
	return nil
}

// createOutput opens where a backup goes: standard output, an S3 object
// (spooled to a temporary file, uploaded by commit), or path.tmp renamed to
// path by commit (abort removes it).
func createOutput(ctx context.Context, cfg app.Config, path string, stdout io.Writer) (w io.Writer, commit func() (int64, error), abort func(), err error) {
	if strings.HasPrefix(path, "s3://") {
		return createS3Output(ctx, cfg, path)
	}
	if path == "-" {
		cw := &countWriter{w: stdout}
		return cw, func() (int64, error) { return cw.n, nil }, func() {}, nil
	}
	if path == "" {
		return nil, nil, nil, errors.New("--out: no file given")
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("backup file: %w", err)
	}
	abort = func() {
		_ = f.Close()
		_ = os.Remove(tmp)
	}
	commit = func() (int64, error) {
		if err := f.Sync(); err != nil {
			abort()
			return 0, fmt.Errorf("backup file: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			abort()
			return 0, fmt.Errorf("backup file: %w", err)
		}
		if err := f.Close(); err != nil {
			_ = os.Remove(tmp)
			return 0, fmt.Errorf("backup file: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			_ = os.Remove(tmp)
			return 0, fmt.Errorf("backup file: %w", err)
		}
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			_ = d.Sync()
			_ = d.Close()
		}
		return fi.Size(), nil
	}
	return f, commit, abort, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
