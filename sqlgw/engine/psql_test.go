package engine_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// psql runs psql (postgresql-client, installed by .ci/run) as user with
// the token as password and returns its output.
func (e *env) psql(t *testing.T, user, token string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql not found; install the postgresql-client package (apt-get install -y postgresql-client)")
	}
	host, port, err := net.SplitHostPort(e.f.SQLAddr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := "host=" + host + " port=" + port + " dbname=floe user=" + user + " sslmode=disable connect_timeout=10"
	cmd := exec.CommandContext(ctx, bin, append([]string{"-X", "-v", "ON_ERROR_STOP=1", "-d", dsn}, args...)...)
	env := []string{"HOME=" + t.TempDir(), "PGPASSWORD=" + token}
	for _, v := range os.Environ() {
		if !strings.HasPrefix(v, "PG") && !strings.HasPrefix(v, "HOME=") {
			env = append(env, v)
		}
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

func TestPsql(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(4)...)
	e.createPeople(t, "hr", "staff")
	tok := e.f.Token(t)
	out, err := e.psql(t, "admin", tok, "-A", "-t", "-c", "SELECT id, name FROM crm.people WHERE region = 'us' ORDER BY id")
	if err != nil || strings.TrimSpace(out) != "2|person-2\n4|person-4" {
		t.Fatalf("psql -c: %v\n%s", err, out)
	}
	out, err = e.psql(t, "admin", tok, "-c", `\dt crm.*`)
	if err != nil || !strings.Contains(out, "people") || strings.Contains(out, "staff") {
		t.Fatalf(`\dt crm.*: %v\n%s`, err, out)
	}
	out, err = e.psql(t, "admin", tok, "-c", `\dt *.*`)
	if err != nil || !strings.Contains(out, "people") || !strings.Contains(out, "staff") {
		t.Fatalf(`\dt *.*: %v\n%s`, err, out)
	}
	// information_schema answers as well.
	out, err = e.psql(t, "admin", tok, "-A", "-t", "-c", "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'crm' AND table_name = 'people' ORDER BY ordinal_position")
	if err != nil || !strings.Contains(out, "salary|DOUBLE") || !strings.Contains(out, "id|BIGINT") {
		t.Fatalf("information_schema.columns: %v\n%s", err, out)
	}
	// A wrong token does not log in.
	if out, err = e.psql(t, "admin", "not-a-token", "-c", "SELECT 1"); err == nil || !strings.Contains(out, "28P01") && !strings.Contains(out, "authentication failed") {
		t.Fatalf("bad token: %v\n%s", err, out)
	}
}

// TestPsqlDescribe runs psql's describe commands (\d and friends), which
// read pg_catalog with the queries psql itself builds.
func TestPsqlDescribe(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(3)...)
	e.createPeople(t, "hr", "staff")
	tok := e.f.Token(t)
	for _, c := range []struct {
		cmd  string
		want []string
		not  []string
	}{
		{`\d crm.people`, []string{`Table "crm.people"`, "id", "bigint", "not null", "name", "character varying", "salary", "double precision"}, []string{"staff"}},
		{`\d hr.staff`, []string{`Table "hr.staff"`, "ssn"}, nil},
		{`\dn`, []string{"crm", "hr"}, nil},
		{`\d`, []string{"people", "staff", "table"}, nil},
		{`\dt+ crm.*`, []string{"people"}, []string{"staff"}},
	} {
		out, err := e.psql(t, "admin", tok, "-c", c.cmd)
		if err != nil {
			t.Errorf("%s: %v\n%s", c.cmd, err, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", c.cmd, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("%s: %q in\n%s", c.cmd, w, out)
			}
		}
	}
}
