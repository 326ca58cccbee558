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

// readSecret reads the next line of r as a secret (which names the line
// in errors).
func readSecret(r *bufio.Reader, what, which string) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the %s from stdin: %w", what, err)
	}
	s := strings.TrimRight(line, "\r\n")
	if s == "" {
		return "", floe.E(floe.Invalid, "foreign catalog", "no %s on stdin (its %s line)", what, which)
	}
	if len(s) > federation.MaxSecret {
		return "", floe.E(floe.Invalid, "foreign catalog", "the %s is longer than %d bytes", what, federation.MaxSecret)
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
holds it on every node of the server. Auth sigv4 (AWS Glue) takes no
secret: each node signs with its AWS default credential chain.

Writes are refused unless --writes is given; they are then forwarded to
the remote with a separate write identity (least privilege: reads never
carry what the remote grants it): --write-client-id with
--write-client-secret-stdin or --write-client-secret-env (oauth2),
--write-token-stdin or --write-token-env (bearer), --write-role-arn
(sigv4). When both the read and the write secret come from stdin, the
first line is the read secret and the second the write secret.`,
		Example: `  printf '%s\n' "$ACME_SECRET" | floe catalog federate acme --uri https://floe.acme.example \
      --warehouse floe --auth oauth2 --client-id isv-federation --client-secret-stdin

  floe catalog federate lake --uri https://glue.us-east-1.amazonaws.com/iceberg \
      --warehouse 123456789012 --auth sigv4 --region us-east-1 \
      --role-arn arn:aws:iam::123456789012:role/isv-floe-reader --external-id isv-7f3a`,
		Args: cobra.ExactArgs(1)}
	fcl := bindAPIClient(fed.Flags(), getenv, DefaultURL, connHelp)
	typ := fed.Flags().String("type", "rest", "catalog type (rest)")
	uri := fed.Flags().String("uri", "", "the remote catalog's base URI, without /v1 (required)")
	wh := fed.Flags().String("warehouse", "", "the remote warehouse, sent to its /v1/config")
	authKind := fed.Flags().String("auth", federation.AuthNone, "authentication to the remote: none, bearer, oauth2 or sigv4")
	clientID := fed.Flags().String("client-id", "", "OAuth2 client id (auth oauth2)")
	secretStdin := fed.Flags().Bool("client-secret-stdin", false, "read the OAuth2 client secret from stdin (stored sealed)")
	secretEnv := fed.Flags().String("client-secret-env", "", "environment variable holding the OAuth2 client secret on every node")
	tokenStdin := fed.Flags().Bool("token-stdin", false, "read the bearer token from stdin (auth bearer; stored sealed)")
	tokenEnv := fed.Flags().String("token-env", "", "environment variable holding the bearer token on every node (auth bearer)")
	scope := fed.Flags().String("scope", "", "OAuth2 scope (optional)")
	tokenURL := fed.Flags().String("token-url", "", "OAuth2 token endpoint (default <uri>/v1/oauth/tokens)")
	ttl := fed.Flags().Duration("cache-ttl", 0, "how long remote metadata is reused (default 30s, at most 1h; negative: no cache)")
	region := fed.Flags().String("region", "", "AWS signing region (auth sigv4, required), e.g. us-east-1")
	signingName := fed.Flags().String("signing-name", "", "SigV4 service name (auth sigv4; default glue)")
	roleARN := fed.Flags().String("role-arn", "", "IAM role assumed for reads on top of the AWS default chain (auth sigv4; optional)")
	externalID := fed.Flags().String("external-id", "", "external id of the AssumeRole (auth sigv4, with --role-arn)")
	writes := fed.Flags().Bool("writes", false, "forward writes to the remote with a separate write identity (off: writes are refused)")
	wClientID := fed.Flags().String("write-client-id", "", "OAuth2 client id of the write identity (auth oauth2, --writes)")
	wSecretStdin := fed.Flags().Bool("write-client-secret-stdin", false, "read the write identity's OAuth2 client secret from stdin (stored sealed)")
	wSecretEnv := fed.Flags().String("write-client-secret-env", "", "environment variable holding the write identity's OAuth2 client secret on every node")
	wTokenStdin := fed.Flags().Bool("write-token-stdin", false, "read the write identity's bearer token from stdin (auth bearer; stored sealed)")
	wTokenEnv := fed.Flags().String("write-token-env", "", "environment variable holding the write identity's bearer token on every node")
	wRoleARN := fed.Flags().String("write-role-arn", "", "IAM role assumed for writes (auth sigv4, --writes)")
	wExternalID := fed.Flags().String("write-external-id", "", "external id of the write role's AssumeRole (default --external-id)")
	fed.MarkFlagsMutuallyExclusive("client-secret-stdin", "client-secret-env", "token-stdin", "token-env")
	fed.MarkFlagsMutuallyExclusive("write-client-secret-stdin", "write-client-secret-env", "write-token-stdin", "write-token-env")
	fed.RunE = func(c *cobra.Command, args []string) error {
		if *uri == "" {
			return floe.E(floe.Invalid, "foreign catalog", "--uri is required")
		}
		req := mgmtapi.ForeignCatalogRequest{Name: args[0], Type: *typ, URI: *uri, Warehouse: *wh, Auth: *authKind,
			ClientID: *clientID, ClientSecretEnv: *secretEnv, TokenEnv: *tokenEnv, Scope: *scope, TokenURL: *tokenURL,
			CacheTTLSeconds: ttl.Seconds(), Region: *region, SigningName: *signingName, RoleARN: *roleARN, ExternalID: *externalID,
			Writes: *writes, WriteClientID: *wClientID, WriteClientSecretEnv: *wSecretEnv, WriteTokenEnv: *wTokenEnv,
			WriteRoleARN: *wRoleARN, WriteExternalID: *wExternalID}
		// One reader: the read secret is the first line, the write secret
		// the next.
		in := bufio.NewReader(io.LimitReader(c.InOrStdin(), 2*(federation.MaxSecret+2)))
		var err error
		switch {
		case *secretStdin:
			req.ClientSecret, err = readSecret(in, "client secret", "first")
		case *tokenStdin:
			req.Token, err = readSecret(in, "token", "first")
		}
		if err != nil {
			return err
		}
		which := "first"
		if *secretStdin || *tokenStdin {
			which = "second"
		}
		switch {
		case *wSecretStdin:
			req.WriteClientSecret, err = readSecret(in, "write client secret", which)
		case *wTokenStdin:
			req.WriteToken, err = readSecret(in, "write token", which)
		}
		if err != nil {
			return err
		}
		var fc mgmtapi.ForeignCatalog
		if err := fcl.call(c.Context(), "POST", "/api/v1/catalogs", req, &fc); err != nil {
			return err
		}
		writesText := "refused"
		if fc.Writes {
			writesText = "forwarded with the write identity"
		}
		fmt.Fprintf(stdout, "created foreign catalog %q: warehouse %q serves %s (auth %s, secret: %s; writes %s)\n",
			fc.Name, fc.Name, fc.URI, fc.Auth, secretText(fc), writesText)
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
		fmt.Fprintln(tw, "NAME\tSOURCE\tURI\tWAREHOUSE\tAUTH\tSECRET\tWRITES")
		for _, fc := range ls.Catalogs {
			writes := "off"
			if fc.Writes {
				writes = "on"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", fc.Name, fc.Source, fc.URI, fc.Warehouse, fc.Auth, secretText(fc), writes)
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
			{"region", fc.Region}, {"signing name", fc.SigningName}, {"role arn", fc.RoleARN}, {"external id", fc.ExternalID},
			{"cache ttl", time.Duration(fc.CacheTTLSeconds * float64(time.Second)).String()}, {"secret", secretText(fc)},
			{"writes", map[bool]string{true: "on", false: "off"}[fc.Writes]}}
		if fc.Writes {
			rows = append(rows, [2]string{"write client id", fc.WriteClientID}, [2]string{"write role arn", fc.WriteRoleARN},
				[2]string{"write external id", fc.WriteExternalID},
				[2]string{"write secret", secretText(mgmtapi.ForeignCatalog{Secret: fc.WriteSecret, SecretEnv: fc.WriteSecretEnv})})
		}
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
