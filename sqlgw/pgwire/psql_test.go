package pgwire

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// psqlResult is the outcome of one psql run.
type psqlResult struct {
	stdout, stderr string
	code           int
}

// runPsql runs psql (from the postgresql-client package) against ts with
// a clean environment; conninfo is added to the server's host and port.
func runPsql(t *testing.T, ts *testServer, password, conninfo string, args ...string) psqlResult {
	t.Helper()
	return runPsqlCmd(t, ts, password, conninfo, nil, args...)
}

func runPsqlCmd(t *testing.T, ts *testServer, password, conninfo string, during func(*exec.Cmd), args ...string) psqlResult {
	t.Helper()
	bin, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql not found; install the postgresql-client package (apt-get install -y postgresql-client)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d dbname=floe connect_timeout=10 %s", ts.addr.Port, conninfo)
	cmd := exec.CommandContext(ctx, bin, append([]string{"-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", dsn}, args...)...)
	env := []string{"HOME=" + t.TempDir(), "PGPASSWORD=" + password, "PGAPPNAME=psql-test"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PG") && !strings.HasPrefix(e, "HOME=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		during(cmd)
	}
	err = cmd.Wait()
	res := psqlResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("psql: %v", err)
	}
	return res
}

// TestPsql runs psql: token and SCRAM logins (SCRAM over TLS with channel
// binding required), -c with several statements, a script with \set,
// errors, a wrong password, and cancelling a query with SIGINT.
func TestPsql(t *testing.T) {
	cert, caPath := testCert(t)
	ts := startServer(t, func(o *Options) {
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	})

	t.Run("token login", func(t *testing.T) {
		r := runPsql(t, ts, "alice-token", "user=alice sslmode=disable", "-c", "select 1")
		if r.code != 0 || r.stdout != "1\n" {
			t.Fatalf("psql: %+v", r)
		}
		r = runPsql(t, ts, "alice-token", "user=alice sslmode=disable", "-c", "show application_name")
		if r.code != 0 || r.stdout != "psql-test\n" {
			t.Fatalf("application_name: %+v", r)
		}
	})
	t.Run("several statements in -c", func(t *testing.T) {
		r := runPsql(t, ts, "alice-token", "user=alice sslmode=disable", "-c", "select 1; select 'two' as x; delete from t")
		if r.code != 0 || r.stdout != "1\ntwo\nDELETE 3\n" {
			t.Fatalf("psql: %+v", r)
		}
	})
	t.Run("script", func(t *testing.T) {
		script := filepath.Join(t.TempDir(), "script.sql")
		body := "\\set n 42\nselect :n as n;\nselect 'a;b' as s; select 2\n;\n\\echo done\nselect * from items limit 1;\n"
		if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runPsql(t, ts, "alice-token", "user=alice sslmode=require", "-F", ",", "-f", script)
		want := "42\na;b\n2\ndone\n" +
			`1,apple,1.50,t,-2,10,0.5,1e+300,2024-02-29,2024-01-02 03:04:05.123456,2024-01-02 03:04:05+00,{"a": [1, 2]},a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,\xdeadbeef,` + "\n"
		if r.code != 0 || r.stdout != want {
			t.Fatalf("psql script:\n got %q\nwant %q\nstderr %s", r.stdout, want, r.stderr)
		}
	})
	t.Run("scram over TLS with channel binding", func(t *testing.T) {
		r := runPsql(t, ts, "bob-secret", "user=bob sslmode=verify-full sslrootcert="+caPath+" channel_binding=require",
			"-c", "show session_authorization")
		if r.code != 0 || r.stdout != "bob\n" {
			t.Fatalf("psql: %+v", r)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		r := runPsql(t, ts, "nope", "user=bob sslmode=disable", "-c", "select 1")
		if r.code != 2 || !strings.Contains(r.stderr, `password authentication failed for user "bob"`) {
			t.Fatalf("psql: %+v", r)
		}
	})
	t.Run("error", func(t *testing.T) {
		r := runPsql(t, ts, "alice-token", "user=alice sslmode=disable", "-c", "select 1/0")
		if r.code != 1 || !strings.Contains(r.stderr, "ERROR:  division by zero") {
			t.Fatalf("psql: %+v", r)
		}
	})
	t.Run("introspection reaches the engine intact", func(t *testing.T) {
		// psql's \dt runs a catalog query with quoted identifiers, regular
		// expressions and a trailing semicolon; answering it is the
		// engine's job, the wire layer must deliver it whole and report the
		// engine's error.
		before := len(ts.engine.statements())
		r := runPsql(t, ts, "alice-token", "user=alice sslmode=disable", "-c", `\dt`)
		if r.code != 1 || !strings.Contains(r.stderr, "ERROR:  syntax error at or near") {
			t.Fatalf("psql: %+v", r)
		}
		seen := ts.engine.statements()[before:]
		if len(seen) != 1 || !strings.HasPrefix(seen[0], `SELECT n.nspname as "Schema"`) ||
			!strings.Contains(seen[0], "n.nspname !~ '^pg_toast'") || !strings.HasSuffix(seen[0], "ORDER BY 1,2") {
			t.Errorf("engine got %q", seen)
		}
	})
	t.Run("cancel with SIGINT", func(t *testing.T) {
		start := time.Now()
		r := runPsqlCmd(t, ts, "alice-token", "user=alice sslmode=disable", func(cmd *exec.Cmd) {
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGINT)
		}, "-c", "select pg_sleep(20)")
		if r.code != 1 || !strings.Contains(r.stderr, "canceling statement due to user request") {
			t.Fatalf("psql: %+v", r)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("cancel took %v", d)
		}
	})
}
