package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/internal/app"
)

// principalRotateCmds are the principal subcommands that rotate a client
// secret and revoke every token of a principal; each is audited with the
// principal "(cli)", never with the secret.
func principalRotateCmds(stdout io.Writer, open func(*cobra.Command, func() (app.Config, error)) (*app.App, error), getenv func(string) string) []*cobra.Command {
	rotate := &cobra.Command{Use: "rotate-secret NAME", Args: cobra.ExactArgs(1),
		Short: "Give a principal a new client secret (shown once); the old one is refused at once or after --grace",
		Long: `Give a principal a new client secret and print it (shown only now; stored
only as a hash). The old secret is refused at the token endpoint at once, or,
with --grace, keeps working for that long (at most 720h) so that clients can
be switched over; only the secret just replaced is kept. Tokens already issued
stay valid: revoke them with "floe principal revoke-tokens".`}
	rload := configFlags(rotate.Flags(), getenv)
	grace := rotate.Flags().Duration("grace", 0, "how long the old secret keeps working (0: refused at once)")
	rotate.RunE = func(c *cobra.Command, args []string) error {
		a, err := open(c, rload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		p, secret, err := a.Auth().RotateSecret(c.Context(), args[0], *grace)
		record(c.Context(), a, "mgmt.principal.rotate_secret", "principal:"+args[0],
			map[string]any{"grace_seconds": int64(*grace / time.Second), "client_id": p.ClientID}, err)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "client_id:     %s\nclient_secret: %s\ncredential:    %s:%s\n", p.ClientID, secret, p.ClientID, secret)
		if *grace > 0 {
			fmt.Fprintf(stdout, "old secret:    works until %s\n", p.OldSecretExpiresAt.UTC().Format(time.RFC3339))
		}
		return nil
	}

	revoke := &cobra.Command{Use: "revoke-tokens NAME", Args: cobra.ExactArgs(1),
		Short: "Refuse every token issued to a principal until now, on every node (new tokens can be obtained)"}
	vload := configFlags(revoke.Flags(), getenv)
	revoke.RunE = func(c *cobra.Command, args []string) error {
		a, err := open(c, vload)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		nb, err := a.Auth().RevokeTokens(c.Context(), args[0])
		record(c.Context(), a, "mgmt.principal.revoke_tokens", "principal:"+args[0],
			map[string]any{"tokens_not_before": nb.UTC()}, err)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tokens of %s issued before %s are refused\n", args[0], nb.UTC().Format(time.RFC3339Nano))
		return nil
	}
	return []*cobra.Command{rotate, revoke}
}
