// Package cli defines floe's subcommands (serve, principal, ...) with cobra.
package cli

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/demo"
)

// Root returns the floe command tree. getenv supplies FLOE_* variables.
func Root(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:           "floe",
		Short:         "Floe: one copy of your data as Apache Iceberg tables, read in place by any engine",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(serveCmd(stdout, stderr, getenv), principalCmd(stdout, stderr, getenv),
		signingKeyCmd(stdout, stderr, getenv), auditCmd(stdout, stderr, getenv), encryptionCmd(stdout, stderr, getenv))
	root.AddCommand(roleCmd(stdout, stderr, getenv))
	root.AddCommand(grantCmd(stdout, stderr, getenv), grantsCmd(stdout, stderr, getenv))
	root.AddCommand(revokeCmd(stdout, stderr, getenv))
	root.AddCommand(stsRevokeCmd(stdout, time.Now))
	root.AddCommand(tagCmd(stdout, stderr, getenv))
	root.AddCommand(maintainCmd(stdout, stderr, getenv), tableCmd(stdout, stderr, getenv))
	root.AddCommand(ingestCmd(stdout, stderr, getenv))
	addTableIngestCmds(root, stdout, getenv)
	root.AddCommand(namespaceCmd(stdout, getenv), functionCmd(stdout, getenv))
	addTableCatalogCmds(root, stdout, getenv)
	root.AddCommand(shareCmd(stdout, getenv), recipientCmd(stdout, getenv))
	root.AddCommand(catalogCmd(stdout, getenv), productCmd(stdout, getenv), cleanroomCmd(stdout, getenv))
	root.AddCommand(versionCmd(stdout))
	root.AddCommand(checkCmd(stdout, stderr, getenv))
	root.AddCommand(backupCmd(stdout, stderr, getenv), restoreCmd(stdout, stderr, getenv))
	return root
}

// configFlags binds the configuration flags shared by every command that
// opens the store, and returns a loader applying defaults < file < env < flags.
func configFlags(fs *pflag.FlagSet, getenv func(string) string) func() (app.Config, error) {
	def := app.Defaults()
	var file string
	fs.StringVar(&file, "config", "", "YAML configuration file (keys as in docs/configuration.md)")
	dataDir := fs.String("data-dir", def.DataDir, "data directory: SQLite metadata and the local warehouse (env FLOE_DATA_DIR)")
	store := fs.String("store", "", "metadata store: SQLite path or postgres:// URL (env FLOE_STORE; default <data-dir>/floe.db)")
	wh := fs.String("warehouse", def.Warehouse, "default warehouse name, used as the REST prefix (env FLOE_WAREHOUSE)")
	whLoc := fs.String("warehouse-location", "", "warehouse root for storage s3, e.g. s3://bucket/prefix (env FLOE_WAREHOUSE_LOCATION; embedded storage: s3://<warehouse>)")
	allowedLocs := fs.StringSlice("allowed-locations", nil, "storage location prefixes, besides the warehouse root, where table, view and namespace locations may lie, comma-separated (env FLOE_ALLOWED_LOCATIONS)")
	logLevel := fs.String("log-level", def.LogLevel, "debug, info, warn or error (env FLOE_LOG_LEVEL)")
	logFormat := fs.String("log-format", def.LogFormat, "text or json (env FLOE_LOG_FORMAT)")
	keyWrapper := fs.String("key-wrapper", "local", "what wraps the store's secrets and the objects' data keys: local (the warehouse key file) or kms (env FLOE_KEY_WRAPPER)")
	kmsKeyID := fs.String("kms-key-id", "", "customer-managed AWS KMS key of --key-wrapper kms: id, ARN or alias (env FLOE_KMS_KEY_ID)")
	kmsRegion := fs.String("kms-region", "", "region of the KMS key (env FLOE_KMS_REGION; default the region)")
	kmsEndpoint := fs.String("kms-endpoint", "", "KMS endpoint override, for a VPC endpoint or an emulator (env FLOE_KMS_ENDPOINT)")
	return func() (app.Config, error) {
		cfg := app.Defaults()
		if file != "" {
			if err := cfg.LoadFile(file); err != nil {
				return cfg, err
			}
		}
		if err := cfg.LoadEnv(getenv); err != nil {
			return cfg, err
		}
		set := func(name string, dst *string, v string) {
			if fs.Changed(name) {
				*dst = v
			}
		}
		set("data-dir", &cfg.DataDir, *dataDir)
		set("store", &cfg.Store, *store)
		set("warehouse", &cfg.Warehouse, *wh)
		set("warehouse-location", &cfg.WarehouseLocation, *whLoc)
		if fs.Changed("allowed-locations") {
			cfg.AllowedLocations = *allowedLocs
		}
		set("log-level", &cfg.LogLevel, *logLevel)
		set("log-format", &cfg.LogFormat, *logFormat)
		set("key-wrapper", &cfg.KeyWrapper, *keyWrapper)
		set("kms-key-id", &cfg.KMSKeyID, *kmsKeyID)
		set("kms-region", &cfg.KMSRegion, *kmsRegion)
		set("kms-endpoint", &cfg.KMSEndpoint, *kmsEndpoint)
		return cfg, nil
	}
}

func newLogger(cfg app.Config, w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", cfg.LogLevel, err)
	}
	o := &slog.HandlerOptions{Level: lvl}
	switch cfg.LogFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, o)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", cfg.LogFormat)
}

func serveCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Floe server (Iceberg REST catalog and OAuth2 token endpoint)",
		Long: `Run the Floe server. With no flags it runs on the embedded default: SQLite
metadata and a local warehouse under ./floe-data, the Iceberg REST catalog on
127.0.0.1:8181. On first start, once every listener is bound, it creates an
admin principal and prints its credential once (a start that fails, e.g. on a
port already taken, creates none). A lost admin credential is replaced with
floe principal create NAME --admin --data-dir DIR.`,
	}
	load := configFlags(cmd.Flags(), getenv)
	listen := cmd.Flags().String("listen", app.Defaults().Listen, "REST catalog listen address (env FLOE_LISTEN)")
	demoFlag := cmd.Flags().Bool("demo", false, "load the generated CRM demo dataset (env FLOE_DEMO)")
	noAuth := cmd.Flags().Bool("insecure-no-auth", false, "DISABLE authentication (throwaway local use only; env FLOE_INSECURE_NO_AUTH)")
	ttl := cmd.Flags().Duration("token-ttl", app.Defaults().TokenTTL, "access token lifetime (env FLOE_TOKEN_TTL)")
	maintOn := cmd.Flags().Bool("maintenance", app.Defaults().Maintenance, "run table maintenance (compaction, manifest rewriting, snapshot expiry, orphan removal, lifecycle) in the background (env FLOE_MAINTENANCE)")
	maintEvery := cmd.Flags().Duration("maintenance-interval", app.Defaults().MaintenanceInterval, "maintenance schedule tick (env FLOE_MAINTENANCE_INTERVAL)")
	retention := cmd.Flags().Duration("snapshot-retention", app.Defaults().SnapshotRetention, "expire snapshots older than this unless a table property says otherwise (env FLOE_SNAPSHOT_RETENTION)")
	s3Listen := cmd.Flags().String("s3-listen", app.Defaults().S3Listen, "embedded S3 endpoint listen address, or off (env FLOE_S3_LISTEN)")
	sqlListen := cmd.Flags().String("sql-listen", app.Defaults().SQLListen, "SQL endpoint (PostgreSQL wire protocol) listen address, or off (env FLOE_SQL_LISTEN)")
	adminListen := cmd.Flags().String("admin-listen", app.Defaults().AdminListen, "admin listener (Prometheus /metrics, /healthz, /readyz) listen address, or off (env FLOE_ADMIN_LISTEN)")
	sqlMaxStmt := cmd.Flags().Duration("sql-max-statement-timeout", app.Defaults().SQLMaxStatementTimeout, "longest a SQL statement may run, whatever its session's statement_timeout (env FLOE_SQL_MAX_STATEMENT_TIMEOUT)")
	publicURL := cmd.Flags().String("public-url", "", "URL clients reach this server at; the OAuth issuer (env FLOE_PUBLIC_URL; default http://<listen>)")
	auditEvery := cmd.Flags().Duration("audit-export-interval", app.Defaults().AuditExportInterval, "how often the audit log is appended to the Iceberg table system.audit; 0 = off (env FLOE_AUDIT_EXPORT_INTERVAL)")
	httpLimits := httpLimitFlags(cmd.Flags())
	purgeSettings := purgeFlags(cmd.Flags())
	sharingSettings := sharingFlags(cmd.Flags())
	tlsSettings := tlsFlags(cmd.Flags())
	allowlists := allowlistFlags(cmd.Flags())
	auditKeep := cmd.Flags().Duration("audit-retention", app.Defaults().AuditRetention, "how long audit records stay in the store; older ones are pruned behind a signed checkpoint; 0 = forever (env FLOE_AUDIT_RETENTION)")
	auditPruneEvery := cmd.Flags().Duration("audit-prune-interval", app.Defaults().AuditPruneInterval, "how often expired audit records are pruned (env FLOE_AUDIT_PRUNE_INTERVAL)")
	auditSealEvery := cmd.Flags().Duration("audit-checkpoint-interval", app.Defaults().AuditCheckpointInterval, "how often a signed checkpoint of the audit chain's head is written into the warehouse; 0 = off (env FLOE_AUDIT_CHECKPOINT_INTERVAL)")
	auditPruneBatch := cmd.Flags().Int("audit-prune-batch", app.Defaults().AuditPruneBatch, "most audit records one prune transaction deletes (env FLOE_AUDIT_PRUNE_BATCH)")
	memLimit := cmd.Flags().String("memory-limit", app.Defaults().MemoryLimit, "Go soft memory limit: a size (2GiB), a share of the machine's or cgroup's memory (75%), or off (env FLOE_MEMORY_LIMIT; GOMEMLIMIT wins)")
	gcPercent := cmd.Flags().Int("gc-percent", app.Defaults().GCPercent, "garbage collector target percentage; 0 = auto, tuned from the live heap and --gc-headroom (env FLOE_GC_PERCENT; GOGC wins)")
	gcHeadroom := cmd.Flags().Int64("gc-headroom", app.Defaults().GCHeadroom, "with --gc-percent 0 (auto): heap room in bytes above the live data (env FLOE_GC_HEADROOM)")
	metaCache := cmd.Flags().Int64("metadata-cache-bytes", app.Defaults().MetadataCacheBytes, "bound on the estimated resident memory of cached parsed metadata and SQL scan plans (env FLOE_METADATA_CACHE_BYTES)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load()
		if err != nil {
			return err
		}
		httpLimits(&cfg)
		purgeSettings(&cfg)
		sharingSettings(&cfg)
		tlsSettings(&cfg)
		allowlists(&cfg)
		if cmd.Flags().Changed("listen") {
			cfg.Listen = *listen
		}
		if cmd.Flags().Changed("demo") {
			cfg.Demo = *demoFlag
		}
		if cmd.Flags().Changed("insecure-no-auth") {
			cfg.InsecureNoAuth = *noAuth
		}
		if cmd.Flags().Changed("token-ttl") {
			cfg.TokenTTL = *ttl
		}
		if cmd.Flags().Changed("maintenance") {
			cfg.Maintenance = *maintOn
		}
		if cmd.Flags().Changed("maintenance-interval") {
			cfg.MaintenanceInterval = *maintEvery
		}
		if cmd.Flags().Changed("snapshot-retention") {
			cfg.SnapshotRetention = *retention
		}
		if cmd.Flags().Changed("s3-listen") {
			cfg.S3Listen = *s3Listen
		}
		if cmd.Flags().Changed("sql-listen") {
			cfg.SQLListen = *sqlListen
		}
		if cmd.Flags().Changed("admin-listen") {
			cfg.AdminListen = *adminListen
		}
		if cmd.Flags().Changed("sql-max-statement-timeout") {
			cfg.SQLMaxStatementTimeout = *sqlMaxStmt
		}
		if cmd.Flags().Changed("public-url") {
			cfg.PublicURL = *publicURL
		}
		if cmd.Flags().Changed("audit-export-interval") {
			cfg.AuditExportInterval = *auditEvery
		}
		if cmd.Flags().Changed("audit-retention") {
			cfg.AuditRetention = *auditKeep
		}
		if cmd.Flags().Changed("audit-prune-interval") {
			cfg.AuditPruneInterval = *auditPruneEvery
		}
		if cmd.Flags().Changed("audit-checkpoint-interval") {
			cfg.AuditCheckpointInterval = *auditSealEvery
		}
		if cmd.Flags().Changed("audit-prune-batch") {
			cfg.AuditPruneBatch = *auditPruneBatch
		}
		if cmd.Flags().Changed("memory-limit") {
			cfg.MemoryLimit = *memLimit
		}
		if cmd.Flags().Changed("gc-percent") {
			cfg.GCPercent = *gcPercent
		}
		if cmd.Flags().Changed("gc-headroom") {
			cfg.GCHeadroom = *gcHeadroom
		}
		if cmd.Flags().Changed("metadata-cache-bytes") {
			cfg.MetadataCacheBytes = *metaCache
		}
		log, err := newLogger(cfg, stderr)
		if err != nil {
			return err
		}
		mem, err := app.ApplyMemory(cfg, getenv, log)
		if err != nil {
			return err
		}
		defer mem.Stop()
		ctx := cmd.Context()
		a, err := app.Open(ctx, cfg, log)
		if err != nil {
			return err
		}
		if err := a.Start(); err != nil {
			_ = a.Close(context.Background())
			return err
		}
		c := a.Config()
		fmt.Fprintf(stdout, "Floe is running.\n  Iceberg REST catalog: %s   (warehouse %q)\n  OAuth2 token URL:     %s/v1/oauth/tokens\n  Metadata store:       %s\n  Warehouse location:   %s\n",
			a.URL(), c.Warehouse, a.Auth().Issuer(), redactDSN(c.Store), c.WarehouseLocation)
		if u := a.S3URL(); u != "" {
			enc := "off"
			if c.Encryption {
				enc = "AES-256-GCM, keys in " + c.EncryptionKeyFile
				if c.EncryptionKey != "" {
					enc = "AES-256-GCM, key from FLOE_ENCRYPTION_KEY"
				}
			}
			fmt.Fprintf(stdout, "  S3 endpoint:          %s   (bucket %q = %s; engines get credentials from loadTable)\n  Encryption at rest:   %s\n",
				u, c.Warehouse, c.WarehouseDir, enc)
		}
		if addr := a.SQLAddr(); addr != "" {
			sslmode := ""
			if a.SQLTLS() {
				sslmode = "?sslmode=verify-full"
			}
			fmt.Fprintf(stdout, "  SQL endpoint:         postgres://%s/%s%s   (PostgreSQL wire protocol; user = principal, password = access token or SQL password)\n", addr, c.Warehouse, sslmode)
		}
		if u := a.AdminURL(); u != "" {
			fmt.Fprintf(stdout, "  Metrics:              %s/metrics   (admin listener: Prometheus metrics, /healthz, /readyz)\n", u)
		}
		printTrust(stdout, a)
		if a.Bootstrap != nil {
			fmt.Fprintf(stdout, "\nFirst admin credential (shown only once, stored hashed):\n  client_id:     %s\n  client_secret: %s\n  PyIceberg:     load_catalog(\"floe\", uri=%q, warehouse=%q, credential=%q)\n",
				a.Bootstrap.ClientID, a.Bootstrap.Secret, a.URL(), c.Warehouse, a.Bootstrap.String())
		}
		if cfg.Demo {
			tok, err := a.AdminToken(ctx)
			if err == nil {
				start := time.Now()
				var roots *x509.CertPool
				if roots, err = a.TLSRoots(); err == nil {
					err = demo.Load(ctx, a.URL(), tok, roots)
				}
				if err == nil && a.SQLAddr() != "" {
					err = demo.PublishProduct(ctx, a.URL(), c.Warehouse, tok, a.PrincipalToken, roots)
				}
				if err == nil {
					fmt.Fprintf(stdout, "\nDemo dataset ready in namespace %q: accounts, opportunities, activities (%s).\n", demo.Namespace, time.Since(start).Round(time.Millisecond))
					if a.SQLAddr() != "" {
						fmt.Fprintf(stdout, "Data product %q publishes the views crm.pipeline and crm.pipeline_by_account, owned by %s with definer rights (floe product show %s).\n", demo.ProductName, demo.Steward, demo.ProductName)
					}
				}
			}
			if err != nil {
				_ = a.Close(context.Background())
				return fmt.Errorf("demo dataset: %w", err)
			}
		}
		fmt.Fprintln(stdout, "\nPress Ctrl-C to stop.")
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return a.Close(sctx)
	}
	return cmd
}

// redactDSN hides a password in a postgres:// URL.
func redactDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				return dsn[:i+3] + rest[:colon] + ":***" + rest[at:]
			}
		}
	}
	return dsn
}

// openApp opens Floe's store and services (not its listeners) for an
// administrative command.
func openApp(c *cobra.Command, load func() (app.Config, error), stderr io.Writer) (*app.App, error) {
	cfg, err := load()
	if err != nil {
		return nil, err
	}
	log, err := newLogger(cfg, stderr)
	if err != nil {
		return nil, err
	}
	return app.Open(c.Context(), cfg, log)
}

func principalCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "principal", Short: "Manage principals (OAuth2 clients)"}
	open := func(c *cobra.Command, load func() (app.Config, error)) (*app.App, error) {
		return openApp(c, load, stderr)
	}

	create := &cobra.Command{Use: "create NAME", Short: "Create a principal and print its client id and secret (shown once)", Args: cobra.ExactArgs(1)}
	cload := configFlags(create.Flags(), getenv)
	scopes := create.Flags().StringSlice("scope", nil, "scopes the principal may request (default: catalog)")
	admin := create.Flags().Bool("admin", false, "make the principal an administrator")
	allowCIDRs := create.Flags().StringSlice("allowed-cidrs", nil, "network allowlist of the principal, CIDR prefixes or addresses (default: any address)")
	create.RunE = func(c *cobra.Command, args []string) error {
		a, err := open(c, cload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		if _, err := auth.CanonicalCIDRs(*allowCIDRs); err != nil {
			return err
		}
		p, secret, err := a.Auth().CreatePrincipal(c.Context(), args[0], *scopes, *admin, "", "")
		if err != nil {
			return err
		}
		if len(*allowCIDRs) > 0 {
			if _, err := a.Auth().SetAllowedCIDRs(c.Context(), p.Name, *allowCIDRs); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "client_id:     %s\nclient_secret: %s\ncredential:    %s:%s\n", p.ClientID, secret, p.ClientID, secret)
		return nil
	}

	list := &cobra.Command{Use: "list", Short: "List principals", Args: cobra.NoArgs}
	lload := configFlags(list.Flags(), getenv)
	list.RunE = func(c *cobra.Command, _ []string) error {
		a, err := open(c, lload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		ps, err := a.Store().ListPrincipals(c.Context())
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCLIENT ID\tSCOPES\tADMIN\tDISABLED\tCREATED\tALLOWED CIDRS")
		for _, p := range ps {
			cidrs := strings.Join(p.AllowedCIDRs, " ")
			if cidrs == "" {
				cidrs = "any"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%v\t%s\t%s\n", p.Name, p.ClientID, strings.Join(p.Scopes, " "), p.Admin, p.Disabled, p.CreatedAt.Format(time.RFC3339), cidrs)
		}
		return tw.Flush()
	}

	setDisabled := func(use, short string, disabled bool) *cobra.Command {
		c := &cobra.Command{Use: use + " NAME", Short: short, Args: cobra.ExactArgs(1)}
		load := configFlags(c.Flags(), getenv)
		c.RunE = func(c *cobra.Command, args []string) error {
			a, err := open(c, load)
			if err != nil {
				return err
			}
			defer a.Close(context.Background())
			return a.Store().SetPrincipalDisabled(c.Context(), args[0], disabled)
		}
		return c
	}
	cmd.AddCommand(create, list, setDisabled("disable", "Disable a principal: its tokens stop working at once", true),
		setDisabled("enable", "Re-enable a disabled principal", false))
	cmd.AddCommand(principalKeyCmds(stdout, open, getenv)...)
	cmd.AddCommand(principalRotateCmds(stdout, open, getenv)...)
	cmd.AddCommand(principalAllowCmd(stdout, open, getenv))
	cmd.AddCommand(principalPasswordCmds(stdout, stderr, getenv)...)
	return cmd
}

// principalKeyCmds are the principal subcommands for JWT assertion keys
// and token revocation.
func principalKeyCmds(stdout io.Writer, open func(*cobra.Command, func() (app.Config, error)) (*app.App, error), getenv func(string) string) []*cobra.Command {
	addKey := &cobra.Command{Use: "add-key NAME KEY.pem", Args: cobra.ExactArgs(2),
		Short: "Register a public key (RSA >= 2048 bits or EC P-256, PEM) the principal signs JWT assertions with",
		Long: `Register a public key for a principal. The principal can then sign RS256
(RSA) or ES256 (EC P-256) JWT assertions with the private key and exchange
them at the token endpoint (private_key_jwt, token exchange, jwt-bearer).
The key id (kid) printed is the key's RFC 7638 SHA-256 thumbprint.

  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem
  openssl pkey -in key.pem -pubout -out key.pub.pem
  floe principal add-key etl key.pub.pem`}
	aload := configFlags(addKey.Flags(), getenv)
	addKey.RunE = func(c *cobra.Command, args []string) error {
		pemBytes, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		a, err := open(c, aload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		k, err := a.Auth().AddClientKey(c.Context(), args[0], pemBytes)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "kid: %s\nalg: %s\n", k.KID, k.Alg)
		return nil
	}

	keys := &cobra.Command{Use: "keys NAME", Short: "List the public keys registered for a principal", Args: cobra.ExactArgs(1)}
	kload := configFlags(keys.Flags(), getenv)
	keys.RunE = func(c *cobra.Command, args []string) error {
		a, err := open(c, kload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		ks, err := a.Auth().ClientKeys(c.Context(), args[0])
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KID\tALG\tADDED")
		for _, k := range ks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.KID, k.Alg, k.CreatedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	}

	removeKey := &cobra.Command{Use: "remove-key NAME KID", Short: "Remove a public key from a principal", Args: cobra.ExactArgs(2)}
	rload := configFlags(removeKey.Flags(), getenv)
	removeKey.RunE = func(c *cobra.Command, args []string) error {
		a, err := open(c, rload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		return a.Auth().RemoveClientKey(c.Context(), args[0], args[1])
	}

	revoke := &cobra.Command{Use: "revoke-token TOKEN", Args: cobra.ExactArgs(1),
		Short: "Revoke a Floe access token on every node (TOKEN, or - to read it from standard input)"}
	vload := configFlags(revoke.Flags(), getenv)
	revoke.RunE = func(c *cobra.Command, args []string) error {
		raw := args[0]
		if raw == "-" {
			b, err := io.ReadAll(io.LimitReader(c.InOrStdin(), 64<<10))
			if err != nil {
				return err
			}
			raw = strings.TrimSpace(string(b))
		}
		a, err := open(c, vload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		info, err := a.Auth().Inspect(c.Context(), raw)
		if err != nil {
			return fmt.Errorf("not a token signed by this Floe: %w", err)
		}
		revoked, err := a.Auth().Revoke(c.Context(), info)
		if err != nil {
			return err
		}
		_, _ = a.Audit().Append(c.Context(), audit.Event{Principal: "(cli)", Action: "oauth.revoke", Resource: "token:" + info.TokenID,
			Outcome: audit.OutcomeSuccess, Detail: map[string]any{"token_id": info.TokenID, "token_client_id": info.ClientID,
				"revoked": revoked, "via": "cli"}})
		if revoked {
			fmt.Fprintf(stdout, "revoked token %s of client %s\n", info.TokenID, info.ClientID)
		} else {
			fmt.Fprintf(stdout, "token %s has expired already\n", info.TokenID)
		}
		return nil
	}
	return []*cobra.Command{addKey, keys, removeKey, revoke}
}
