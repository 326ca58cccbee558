package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/objstore/sse"
)

// signingKeyCmd is `floe signing-key rotate`.
func signingKeyCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "signing-key", Short: "Manage Floe's token signing keys"}
	rotate := &cobra.Command{Use: "rotate", Args: cobra.NoArgs,
		Short: "Create a new signing key and make it current",
		Long: `Create a new token signing key and make it current on every node. Older
keys stay in the JWKS and keep verifying until every token they signed has
expired, then they are pruned; clients notice nothing.`}
	load := configFlags(rotate.Flags(), getenv)
	rotate.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, load, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		kid, err := a.Auth().RotateKey(c.Context())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "new signing key: %s\n", kid)
		return nil
	}
	cmd.AddCommand(rotate)
	return cmd
}

// encryptionCmd is `floe encryption new-key` and `floe encryption rewrap`.
func encryptionCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "encryption", Short: "Manage the warehouse keys that encrypt the embedded store at rest"}
	newKey := &cobra.Command{Use: "new-key", Args: cobra.NoArgs,
		Short: "Print a new key line to append to the key file",
		Long: `Print a line "<id> <base64 key>" for a new 256-bit warehouse key. Append it to
the key file (the last key is current), restart the nodes, then run
"floe encryption rewrap" to move existing objects to it.`}
	newKey.RunE = func(c *cobra.Command, _ []string) error {
		k, err := sse.GenerateKey()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "k%s %s\n", time.Now().UTC().Format("20060102T150405"), k)
		return nil
	}
	rewrap := &cobra.Command{Use: "rewrap", Args: cobra.NoArgs,
		Short: "Re-wrap every object's data key under the current warehouse key (no data is rewritten)"}
	load := configFlags(rewrap.Flags(), getenv)
	rewrap.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, load, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		start := time.Now()
		res, err := a.RewrapObjects(c.Context())
		fmt.Fprintf(stdout, "scanned %d objects: %d re-wrapped, %d not encrypted (%s)\n", res.Scanned, res.Rewrapped, res.Plaintext, time.Since(start).Round(time.Millisecond))
		return err
	}
	cmd.AddCommand(newKey, rewrap)
	return cmd
}

// auditCmd is `floe audit verify` and `floe audit tail`.
func auditCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Inspect and verify the audit log"}
	verify := &cobra.Command{Use: "verify", Args: cobra.NoArgs,
		Short: "Check the audit log's hash chain; exits non-zero if any record was modified, deleted or inserted"}
	vload := configFlags(verify.Flags(), getenv)
	verify.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, vload, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		if err := a.Audit().Verify(c.Context()); err != nil {
			return err
		}
		seq, hash, err := a.Store().AuditHead(c.Context())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "audit log intact: %d records, head %s\n", seq, hash)
		return nil
	}
	tail := &cobra.Command{Use: "tail", Args: cobra.NoArgs, Short: "Print the newest audit records"}
	tload := configFlags(tail.Flags(), getenv)
	n := tail.Flags().IntP("lines", "n", 20, "how many records")
	tail.RunE = func(c *cobra.Command, _ []string) error {
		a, err := openApp(c, tload, stderr)
		if err != nil {
			return err
		}
		defer a.Close(context.Background())
		head, _, err := a.Store().AuditHead(c.Context())
		if err != nil {
			return err
		}
		rs, err := a.Store().AuditRecords(c.Context(), max(0, head-int64(*n)), *n)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tTIME\tPRINCIPAL\tACTION\tRESOURCE\tOUTCOME\tREQUEST\tDETAIL")
		for _, r := range rs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Format(time.RFC3339), r.Principal, r.Action,
				r.Resource, r.Outcome, r.RequestID, r.Detail)
		}
		return tw.Flush()
	}
	cmd.AddCommand(verify, tail)
	return cmd
}
