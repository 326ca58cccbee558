package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfig_SQLLimits reads the SQL endpoint's limits from YAML and env
// and refuses values that would lift a bound.
func TestConfig_SQLLimits(t *testing.T) {
	c := Defaults()
	c.DataDir = t.TempDir()
	if c.SQLMaxStatementTimeout != 15*time.Minute || c.SQLStartupTimeout != 10*time.Second || c.SQLCacheFiles != 256 ||
		c.SQLMaxUnauthenticated != 512 || c.SQLMaxUnauthenticatedPerIP != 128 || c.SQLMaxConnections != 256 || c.SQLLoginFailuresPerMinute != 10 {
		t.Errorf("defaults: %+v", c)
	}
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte("sql_max_statement_timeout: 1m\nsql_cache_files: 64\nsql_max_unauthenticated_per_ip: 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadFile(f); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FLOE_SQL_STARTUP_TIMEOUT": "3s", "FLOE_SQL_MAX_UNAUTHENTICATED": "100", "FLOE_SQL_MAX_CONNECTIONS": "50",
		"FLOE_SQL_LOGIN_FAILURES_PER_MINUTE": "-1", "FLOE_SQL_CACHE_FILES": "32"}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.SQLMaxStatementTimeout != time.Minute || c.SQLCacheFiles != 32 || c.SQLMaxUnauthenticatedPerIP != 4 || c.SQLStartupTimeout != 3*time.Second ||
		c.SQLMaxUnauthenticated != 100 || c.SQLMaxConnections != 50 || c.SQLLoginFailuresPerMinute != -1 {
		t.Errorf("loaded: %+v", c)
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.SQLCacheFiles = 0 }, "sql_cache_files"},
		{func(c *Config) { c.SQLMaxStatementTimeout = 0 }, "sql_max_statement_timeout"},
		{func(c *Config) { c.SQLStartupTimeout = 0 }, "sql_startup_timeout"},
		{func(c *Config) { c.SQLMaxUnauthenticatedPerIP = 0 }, "sql_max_unauthenticated"},
	} {
		c := Defaults()
		c.DataDir = t.TempDir()
		tc.edit(&c)
		if err := c.Finish(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
	if err := (&Config{}).LoadEnv(func(k string) string { return map[string]string{"FLOE_SQL_CACHE_FILES": "many"}[k] }); err == nil ||
		!strings.Contains(err.Error(), "FLOE_SQL_CACHE_FILES") {
		t.Errorf("bad FLOE_SQL_CACHE_FILES: %v", err)
	}
}
