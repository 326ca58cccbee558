package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/check"
)

// ExitError is an error with the process exit code it calls for.
type ExitError struct {
	Code int
	Err  error
}

// Error returns the wrapped error's message.
func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *ExitError) Unwrap() error { return e.Err }

// errChecksFailed is the error of a check run with a failing finding.
var errChecksFailed = errors.New("some checks failed")

func checkCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Run the S1–S7 readiness checklist against a running Iceberg REST catalog (Floe or any other)",
		Long: `Run the design-validation checklist (standards S1–S7) as real calls against
a running Iceberg REST catalog — Floe or any other (Polaris, Lakekeeper, ...):
OAuth2 client credentials and token exchange, config, namespaces, loadTable,
vended credentials (present without the delegation header, short-lived,
scoped to the table, read-only for read tokens), views, table layout and
the DESCRIBE privileges a federating engine needs. Each finding is pass,
warn, fail or skip, with its evidence and a one-sentence fix.

Exit status: 0 when nothing failed, 1 when a check failed, 2 on a usage or
connection error. See docs/operations.md, "Readiness check (floe check)".`,
		Args: cobra.NoArgs,
	}
	var o check.Options
	fs := cmd.Flags()
	fs.StringVar(&o.URL, "url", "", "catalog base URI, e.g. http://127.0.0.1:8181 (env FLOE_URL; default "+DefaultURL+")")
	fs.StringVar(&o.Warehouse, "warehouse", "", "warehouse sent to GET /v1/config (default: the server's)")
	fs.StringVar(&o.Credential, "credential", "", "client_id:client_secret for OAuth2 client credentials (env FLOE_CREDENTIAL)")
	fs.StringVar(&o.Token, "token", "", "bearer token instead of --credential (env FLOE_TOKEN)")
	fs.StringVar(&o.TokenURL, "token-url", "", "OAuth2 token endpoint (default: the config's oauth2-server-uri, else <url>/v1/oauth/tokens)")
	fs.StringVar(&o.FederationCredential, "federation-credential", "", "client_id:client_secret of the identity a federating engine uses: S7 (and S4 read-only) run as it")
	fs.StringVar(&o.FederationToken, "federation-token", "", "bearer token of the federation identity, instead of --federation-credential")
	fs.StringSliceVar(&o.Tables, "table", nil, "tables to sample first, namespace.name (repeatable)")
	fs.IntVar(&o.SampleTables, "sample", check.DefaultSampleTables, "tables sampled at most")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on the whole run")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if o.URL == "" {
			o.URL = getenv("FLOE_URL")
		}
		if o.URL == "" {
			o.URL = DefaultURL
		}
		if o.Credential == "" && o.Token == "" {
			o.Credential, o.Token = getenv("FLOE_CREDENTIAL"), getenv("FLOE_TOKEN")
		}
		o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		ctx := cmd.Context()
		if *timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		rep, err := check.Run(ctx, o)
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else if err := printReport(stdout, rep); err != nil {
			return err
		}
		if rep.Failed() {
			return &ExitError{Code: 1, Err: errChecksFailed}
		}
		return nil
	}
	return cmd
}

// printReport writes the findings as a table, then the fixes of the
// warnings and failures.
func printReport(w io.Writer, rep *check.Report) error {
	kind := "Iceberg REST catalog"
	if rep.Floe {
		kind = "Floe"
	}
	fmt.Fprintf(w, "floe check: %s at %s (prefix %q)\n\n", kind, rep.URL, rep.Prefix)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STD\tCHECK\tSTATUS\tEVIDENCE")
	counts := map[check.Status]int{}
	for _, f := range rep.Findings {
		counts[f.Status]++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Standard, f.ID, strings.ToUpper(string(f.Status)), f.Evidence)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	first := true
	for _, f := range rep.Findings {
		if f.Fix == "" {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nFixes:")
			first = false
		}
		fmt.Fprintf(w, "  %s (%s): %s\n", f.ID, f.Status, f.Fix)
	}
	_, err := fmt.Fprintf(w, "\n%d pass, %d warn, %d fail, %d skip in %s\n", counts[check.Pass], counts[check.Warn],
		counts[check.Fail], counts[check.Skip], rep.Duration.Round(time.Millisecond))
	return err
}
