// Package cli defines floe's subcommands (serve, principal, ...) with cobra.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
	root.AddCommand(serveCmd(stdout, stderr, getenv), principalCmd(stdout, stderr, getenv))
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
	whLoc := fs.String("warehouse-location", "", "warehouse root location (env FLOE_WAREHOUSE_LOCATION; default file://<data-dir>/warehouse)")
	logLevel := fs.String("log-level", def.LogLevel, "debug, info, warn or error (env FLOE_LOG_LEVEL)")
	logFormat := fs.String("log-format", def.LogFormat, "text or json (env FLOE_LOG_FORMAT)")
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
		set("log-level", &cfg.LogLevel, *logLevel)
		set("log-format", &cfg.LogFormat, *logFormat)
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
127.0.0.1:8181. On first start it creates an admin principal and prints its
credential once.`,
	}
	load := configFlags(cmd.Flags(), getenv)
	listen := cmd.Flags().String("listen", app.Defaults().Listen, "REST catalog listen address (env FLOE_LISTEN)")
	demoFlag := cmd.Flags().Bool("demo", false, "load the generated CRM demo dataset (env FLOE_DEMO)")
	noAuth := cmd.Flags().Bool("insecure-no-auth", false, "DISABLE authentication (throwaway local use only; env FLOE_INSECURE_NO_AUTH)")
	ttl := cmd.Flags().Duration("token-ttl", app.Defaults().TokenTTL, "access token lifetime (env FLOE_TOKEN_TTL)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load()
		if err != nil {
			return err
		}
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
		log, err := newLogger(cfg, stderr)
		if err != nil {
			return err
		}
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
			a.URL(), c.Warehouse, a.URL(), redactDSN(c.Store), c.WarehouseLocation)
		if a.Bootstrap != nil {
			fmt.Fprintf(stdout, "\nFirst admin credential (shown only once, stored hashed):\n  client_id:     %s\n  client_secret: %s\n  PyIceberg:     load_catalog(\"floe\", uri=%q, warehouse=%q, credential=%q)\n",
				a.Bootstrap.ClientID, a.Bootstrap.Secret, a.URL(), c.Warehouse, a.Bootstrap.String())
		}
		if cfg.Demo {
			tok, err := a.AdminToken(ctx)
			if err == nil {
				start := time.Now()
				err = demo.Load(ctx, a.URL(), tok)
				if err == nil {
					fmt.Fprintf(stdout, "\nDemo dataset ready in namespace %q: accounts, opportunities, activities (%s).\n", demo.Namespace, time.Since(start).Round(time.Millisecond))
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

func principalCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "principal", Short: "Manage principals (OAuth2 clients)"}
	open := func(c *cobra.Command, load func() (app.Config, error)) (*app.App, error) {
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

	create := &cobra.Command{Use: "create NAME", Short: "Create a principal and print its client id and secret (shown once)", Args: cobra.ExactArgs(1)}
	cload := configFlags(create.Flags(), getenv)
	scopes := create.Flags().StringSlice("scope", nil, "scopes the principal may request (default: catalog)")
	admin := create.Flags().Bool("admin", false, "make the principal an administrator")
	create.RunE = func(c *cobra.Command, args []string) error {
		a, err := open(c, cload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		p, secret, err := a.Auth().CreatePrincipal(c.Context(), args[0], *scopes, *admin, "", "")
		if err != nil {
			return err
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
		fmt.Fprintln(tw, "NAME\tCLIENT ID\tSCOPES\tADMIN\tDISABLED\tCREATED")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%v\t%s\n", p.Name, p.ClientID, strings.Join(p.Scopes, " "), p.Admin, p.Disabled, p.CreatedAt.Format(time.RFC3339))
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
	return cmd
}
