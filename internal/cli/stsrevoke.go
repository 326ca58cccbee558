package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/vend"
)

// stsRevokeCmd prints the IAM policy that makes AWS refuse STS credentials
// Floe vended before a revocation (storage: s3): STS cannot recall issued
// keys, so the operator puts this deny policy on the vending role.
func stsRevokeCmd(stdout io.Writer, now func() time.Time) *cobra.Command {
	var before string
	var principals, tokens []string
	cmd := &cobra.Command{
		Use:   "sts-revoke-policy",
		Short: "Print the IAM deny policy that revokes STS credentials vended before now (storage: s3)",
		Long: `Print the IAM policy that makes AWS refuse STS sessions Floe vended, for the
role named by s3.role_arn (AWS cannot recall issued keys):

  --before now|RFC3339      every session issued before the time
  --principal NAME[=TIME]   the sessions of a principal issued before TIME (default now)
  --token JTI               every session vended under an access token

Put it on the role as an inline policy, e.g.
  floe sts-revoke-policy --principal bob > deny.json
  aws iam put-role-policy --role-name floe-vend --policy-name FloeRevokedSessions --policy-document file://deny.json
Per-principal and per-token statements match only sessions tagged by Floe
(the role's trust policy must allow sts:TagSession). See docs/security.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			at := func(s string) (time.Time, error) {
				if s == "" || s == "now" {
					return now(), nil
				}
				t, err := time.Parse(time.RFC3339, s)
				if err != nil {
					return time.Time{}, fmt.Errorf("time %q: want now or RFC 3339, e.g. 2026-12-03T15:00:00Z", s)
				}
				return t, nil
			}
			var r vend.RevokeSessions
			if before != "" {
				t, err := at(before)
				if err != nil {
					return err
				}
				r.Before = t
			}
			for _, p := range principals {
				name, when, _ := strings.Cut(p, "=")
				t, err := at(when)
				if err != nil {
					return err
				}
				if r.Principals == nil {
					r.Principals = map[string]time.Time{}
				}
				r.Principals[name] = t
			}
			r.TokenIDs = tokens
			policy, err := vend.RevokeSessionsPolicy(r)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, policy)
			return err
		},
	}
	cmd.Flags().StringVar(&before, "before", "", "revoke every session issued before this time (now or RFC 3339)")
	cmd.Flags().StringArrayVar(&principals, "principal", nil, "revoke a principal's sessions issued before a time: NAME or NAME=TIME (repeatable)")
	cmd.Flags().StringArrayVar(&tokens, "token", nil, "revoke the sessions vended under an access token id (repeatable)")
	return cmd
}
