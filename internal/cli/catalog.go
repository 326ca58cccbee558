package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/mgmtapi"
)

// The foreign catalog commands run through a Floe server's management API
// with the caller's credentials (an administrator's); secrets are read from
// stdin, never from the command line.

func catalogPath(name string) string { return "/api/v1/catalogs/" + url.PathEscape(name) }

// readSecret reads the first line of r as a secret.
func readSecret(r io.Reader, what string) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, federation.MaxSecret+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the %s from stdin: %w", what, err)
	}
	s := strings.TrimRight(line, "\r\n")
	if s == "" {
		return "", floe.E(floe.Invalid, "foreign catalog", "no %s on stdin (its first line)", what)
	}
	return s, nil
}

func catalogCmd(stdout io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "catalog", Short: "Manage foreign catalogs: remote Iceberg REST catalogs served as warehouses of Floe (federation)"}

	fed := &cobra.Command{Use: "federate NAME", Short: "Serve a remote Iceberg REST catalog as the warehouse NAME (administrators)",
		Long: `Create a foreign catalog: every node of the server serves the remote catalog
as the warehouse NAME within 5 seconds, read in place and governed by
Floe's grants (docs/federation.md).

The secret (the OAuth2 client secret, or the bearer token) is never taken
on the command line: --client-secret-stdin / --token-stdin read it from the
first line of stdin, and the server stores it sealed with its key wrapper;
or --client-secret-env / --token-env name the environment variable that
holds it on every node of the server.`,
		Example: `  printf '%s\n' "$ACME_SECRET" | floe catalog federate acme --uri https://floe.acme.example \
      --warehouse floe --auth oauth2 --client-id isv-federation --client-secret-stdin`,
		Args: cobra.ExactArgs(1)}
	fcl := bindAPIClient(fed.Flags(), getenv, DefaultURL, connHelp)
	typ := fed.Flags().String("type", "rest", "catalog type (rest)")
	uri := fed.Flags().String("uri", "", "the remote catalog's base URI, without /v1 (required)")
	wh := fed.Flags().String("warehouse", "", "the remote warehouse, sent to its /v1/config")
	authKind := fed.Flags().String("auth", federation.AuthNone, "authentication to the remote: none, bearer or oauth2")
	clientID := fed.Flags().String("client-id", "", "OAuth2 client id (auth oauth2)")
	secretStdin := fed.Flags().Bool("client-secret-stdin", false, "read the OAuth2 client secret from stdin (stored sealed)")
	secretEnv := fed.Flags().String("client-secret-env", "", "environment variable holding the OAuth2 client secret on every node")
	tokenStdin := fed.Flags().Bool("token-stdin", false, "read the bearer token from stdin (auth bearer; stored sealed)")
	tokenEnv := fed.Flags().String("token-env", "", "environment variable holding the bearer token on every node (auth bearer)")
	scope := fed.Flags().String("scope", "", "OAuth2 scope (optional)")
	tokenURL := fed.Flags().String("token-url", "", "OAuth2 token endpoint (default <uri>/v1/oauth/tokens)")
	ttl := fed.Flags().Duration("cache-ttl", 0, "how long remote metadata is reused (default 30s, at most 1h; negative: no cache)")
	fed.MarkFlagsMutuallyExclusive("client-secret-stdin", "client-secret-env", "token-stdin", "token-env")
	fed.RunE = func(c *cobra.Command, args []string) error {
		if *uri == "" {
			return floe.E(floe.Invalid, "foreign catalog", "--uri is required")
		}
		req := mgmtapi.ForeignCatalogRequest{Name: args[0], Type: *typ, URI: *uri, Warehouse: *wh, Auth: *authKind,
			ClientID: *clientID, ClientSecretEnv: *secretEnv, TokenEnv: *tokenEnv, Scope: *scope, TokenURL: *tokenURL,
			CacheTTLSeconds: ttl.Seconds()}
		var err error
		switch {
		case *secretStdin:
			req.ClientSecret, err = readSecret(c.InOrStdin(), "client secret")
		case *tokenStdin:
			req.Token, err = readSecret(c.InOrStdin(), "token")
		}
		if err != nil {
			return err
		}
		var fc mgmtapi.ForeignCatalog
		if err := fcl.call(c.Context(), "POST", "/api/v1/catalogs", req, &fc); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created foreign catalog %q: warehouse %q serves %s (auth %s, secret: %s)\n", fc.Name, fc.Name, fc.URI, fc.Auth, secretText(fc))
		return nil
	}

	list := &cobra.Command{Use: "list", Short: "List the foreign catalogs, configured and created at run time (administrators)", Args: cobra.NoArgs}
	lcl := bindAPIClient(list.Flags(), getenv, DefaultURL, connHelp)
	ljson := list.Flags().Bool("json", false, "print JSON")
	list.RunE = func(c *cobra.Command, _ []string) error {
		var ls mgmtapi.ForeignCatalogList
		if err := lcl.call(c.Context(), "GET", "/api/v1/catalogs", nil, &ls); err != nil {
			return err
		}
		if *ljson {
			return printJSON(stdout, ls)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSOURCE\tURI\tWAREHOUSE\tAUTH\tSECRET")
		for _, fc := range ls.Catalogs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", fc.Name, fc.Source, fc.URI, fc.Warehouse, fc.Auth, secretText(fc))
		}
		return tw.Flush()
	}

	show := &cobra.Command{Use: "show NAME", Short: "Show a foreign catalog (never its secret)", Args: cobra.ExactArgs(1)}
	scl := bindAPIClient(show.Flags(), getenv, DefaultURL, connHelp)
	sjson := show.Flags().Bool("json", false, "print JSON")
	show.RunE = func(c *cobra.Command, args []string) error {
		var fc mgmtapi.ForeignCatalog
		if err := scl.call(c.Context(), "GET", catalogPath(args[0]), nil, &fc); err != nil {
			return err
		}
		if *sjson {
			return printJSON(stdout, fc)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		rows := [][2]string{{"name", fc.Name}, {"source", fc.Source}, {"type", fc.Type}, {"uri", fc.URI}, {"warehouse", fc.Warehouse},
			{"auth", fc.Auth}, {"client id", fc.ClientID}, {"scope", fc.Scope}, {"token url", fc.TokenURL},
			{"cache ttl", time.Duration(fc.CacheTTLSeconds * float64(time.Second)).String()}, {"secret", secretText(fc)}}
		if fc.CreatedAt != nil {
			rows = append(rows, [2]string{"created", fc.CreatedAt.Format(time.RFC3339) + " by " + fc.CreatedBy})
		}
		for _, r := range rows {
			if r[1] != "" {
				fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
			}
		}
		return tw.Flush()
	}

	drop := &cobra.Command{Use: "drop NAME", Short: "Drop a foreign catalog created at run time; every node stops serving it", Args: cobra.ExactArgs(1)}
	dcl := bindAPIClient(drop.Flags(), getenv, DefaultURL, connHelp)
	drop.RunE = func(c *cobra.Command, args []string) error {
		if err := dcl.call(c.Context(), "DELETE", catalogPath(args[0]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "dropped foreign catalog %q\n", args[0])
		return nil
	}
	cmd.AddCommand(fed, list, show, drop)
	return cmd
}

// secretText says where a catalog's secret is: "set" (stored sealed),
// "env NAME" or "none".
func secretText(fc mgmtapi.ForeignCatalog) string {
	if fc.Secret == "env" {
		return "env " + fc.SecretEnv
	}
	return fc.Secret
}
