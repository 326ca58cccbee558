package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floe-lake/floe/internal/app"
)

// allowlistFlags adds the serve flags of the listeners' CIDR allowlists
// and the trusted proxies, and returns the function that applies those
// set on the command line to a configuration.
func allowlistFlags(fs *pflag.FlagSet) func(*app.Config) {
	rest := fs.StringSlice("rest-allow-cidrs", nil, "CIDR allowlist of the REST catalog listener (with the token endpoint and the management API); empty allows all (env FLOE_REST_ALLOW_CIDRS)")
	s3 := fs.StringSlice("s3-allow-cidrs", nil, "CIDR allowlist of the embedded S3 endpoint; empty allows all (env FLOE_S3_ALLOW_CIDRS)")
	sql := fs.StringSlice("sql-allow-cidrs", nil, "CIDR allowlist of the SQL endpoint, checked before the password exchange; empty allows all (env FLOE_SQL_ALLOW_CIDRS)")
	proxies := fs.StringSlice("trusted-proxies", nil, "addresses or CIDRs of proxies whose X-Forwarded-For is believed; default none (env FLOE_TRUSTED_PROXIES)")
	return func(cfg *app.Config) {
		n := &cfg.Network
		for name, set := range map[string]func(){
			"rest-allow-cidrs": func() { n.RESTAllowCIDRs = *rest },
			"s3-allow-cidrs":   func() { n.S3AllowCIDRs = *s3 },
			"sql-allow-cidrs":  func() { n.SQLAllowCIDRs = *sql },
			"trusted-proxies":  func() { n.TrustedProxies = *proxies },
		} {
			if fs.Changed(name) {
				set()
			}
		}
	}
}

// principalAllowCmd is `floe principal allow NAME [CIDR...]`: it replaces
// the principal's network allowlist (no CIDR: any address).
func principalAllowCmd(stdout io.Writer, open func(*cobra.Command, func() (app.Config, error)) (*app.App, error), getenv func(string) string) *cobra.Command {
	c := &cobra.Command{Use: "allow NAME [CIDR...]", Short: "Set the network allowlist of a principal (no CIDR: any address)",
		Long: `Replace the network allowlist of a principal. Token issuance, its bearer
tokens, the storage credentials vended to it from now on and its SQL logins
are refused from a client address outside the list. Entries are CIDR
prefixes or addresses; with none the principal may connect from anywhere.

  floe principal allow etl 10.0.0.0/8 2001:db8::/32
  floe principal allow etl          # any address`,
		Args: cobra.MinimumNArgs(1)}
	load := configFlags(c.Flags(), getenv)
	c.RunE = func(c *cobra.Command, args []string) error {
		a, err := open(c, load)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		cidrs, err := a.Auth().SetAllowedCIDRs(c.Context(), args[0], args[1:])
		if err != nil {
			return err
		}
		if len(cidrs) == 0 {
			fmt.Fprintf(stdout, "%s: any address\n", args[0])
			return nil
		}
		fmt.Fprintf(stdout, "%s: %s\n", args[0], strings.Join(cidrs, " "))
		return nil
	}
	return c
}
