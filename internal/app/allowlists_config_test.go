package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/fakeclock"
)

// TestConfig_Allowlists: the allowlists come from YAML, then env
// (comma-separated), and a bad entry is a configuration error naming the key.
func TestConfig_Allowlists(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "floe.yaml")
	yaml := "rest_allow_cidrs: [10.0.0.0/8, 192.168.1.7]\ntrusted_proxies: [127.0.0.1]\ns3_allow_cidrs: [172.16.0.0/12]\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	c.DataDir = dir
	if err := c.LoadFile(file); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FLOE_S3_ALLOW_CIDRS": "10.0.0.0/8,::1", "FLOE_SQL_ALLOW_CIDRS": "127.0.0.0/8"}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	n := c.Network
	if n.rest.String() != "10.0.0.0/8,192.168.1.7/32" || n.s3.String() != "10.0.0.0/8,::1/128" || n.sql.String() != "127.0.0.0/8" ||
		n.proxies.String() != "127.0.0.1/32" {
		t.Fatalf("allowlists: rest %s, s3 %s, sql %s, proxies %s", n.rest, n.s3, n.sql, n.proxies)
	}
	for _, tt := range []struct {
		key  string
		edit func(*Allowlists)
	}{
		{"rest_allow_cidrs", func(n *Allowlists) { n.RESTAllowCIDRs = []string{"10.0.0.0/33"} }},
		{"s3_allow_cidrs", func(n *Allowlists) { n.S3AllowCIDRs = []string{"host.example"} }},
		{"sql_allow_cidrs", func(n *Allowlists) { n.SQLAllowCIDRs = []string{"1.2.3"} }},
		{"trusted_proxies", func(n *Allowlists) { n.TrustedProxies = []string{"fe80::1%eth0"} }},
	} {
		c := Defaults()
		c.DataDir = dir
		tt.edit(&c.Network)
		if err := c.Finish(); err == nil || !strings.HasPrefix(err.Error(), tt.key+": ") {
			t.Errorf("%s: err %v, want one naming the key", tt.key, err)
		}
	}
}

// TestDeniedAuditBudget: at most the budget of net.denied events is
// recorded per listener and second; the refusals beyond it are counted and
// the next recorded event reports them; listeners have budgets of their own.
func TestDeniedAuditBudget(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	d := newDeniedAudit(3, clock.Now)
	recorded := 0
	for range 10 {
		if ok, _ := d.take("rest"); ok {
			recorded++
		}
	}
	if recorded != 3 {
		t.Fatalf("recorded %d of 10 in one second, want the budget 3", recorded)
	}
	if ok, _ := d.take("s3"); !ok {
		t.Fatal("another listener's budget was spent")
	}
	clock.Advance(time.Second)
	ok, suppressed := d.take("rest")
	if !ok || suppressed != 7 {
		t.Fatalf("next second: record %v, suppressed %d, want true, 7", ok, suppressed)
	}
	if _, suppressed := d.take("rest"); suppressed != 0 {
		t.Fatalf("the suppressed count was reported twice: %d", suppressed)
	}
}
