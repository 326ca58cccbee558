package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/sqlgw/pgwire"
)

// minSQLPassword is the shortest SQL password set-password accepts.
const minSQLPassword = 12

// principalPasswordCmds are the principal subcommands for SQL endpoint
// passwords (SCRAM-SHA-256).
func principalPasswordCmds(stdout, stderr io.Writer, getenv func(string) string) []*cobra.Command {
	set := newAppCmd(&cobra.Command{Use: "set-password NAME", Args: cobra.ExactArgs(1),
		Short: "Let a principal log in to the SQL endpoint with a password (read from stdin)",
		Long: `Set the password with which a principal logs in to the SQL endpoint
(PostgreSQL wire protocol, SCRAM-SHA-256). The password is read from the
first line of standard input; Floe stores only its SCRAM verifier. Without a
password a principal logs in with an OAuth access token as its password.

  printf '%s\n' "$PASSWORD" | floe principal set-password analyst`}, getenv)
	clear := newAppCmd(&cobra.Command{Use: "clear-password NAME", Args: cobra.ExactArgs(1),
		Short: "Remove a principal's SQL password (it then logs in with an access token only)"}, getenv)
	return []*cobra.Command{
		set.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			pw, err := readPassword(set.cmd.InOrStdin())
			if err != nil {
				return err
			}
			v, err := pgwire.NewScramVerifier(pw)
			if err != nil {
				return err
			}
			err = a.Auth().SetSQLPassword(ctx, args[0], v.String())
			record(ctx, a, "principal.password.set", "principal:"+args[0], nil, err)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "SQL password set for %s\n", args[0])
			return nil
		}),
		clear.run(stderr, func(ctx context.Context, a *app.App, args []string) error {
			err := a.Auth().SetSQLPassword(ctx, args[0], "")
			record(ctx, a, "principal.password.clear", "principal:"+args[0], nil, err)
			return err
		}),
	}
}

// readPassword reads the first line of r as a password.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if len([]rune(pw)) < minSQLPassword {
		return "", fmt.Errorf("the password must have at least %d characters (read from the first line of stdin)", minSQLPassword)
	}
	return pw, nil
}
