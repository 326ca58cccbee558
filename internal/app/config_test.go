package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfig_Precedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "floe.yaml")
	if err := os.WriteFile(file, []byte("listen: 127.0.0.1:9999\nwarehouse: fromfile\ntoken_ttl: 30m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	if err := c.LoadFile(file); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FLOE_WAREHOUSE": "fromenv", "FLOE_DEMO": "true", "FLOE_DATA_DIR": dir}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9999" || c.Warehouse != "fromenv" || !c.Demo || c.TokenTTL != 30*time.Minute {
		t.Errorf("precedence wrong: %+v", c)
	}
	if c.Store != filepath.Join(dir, "floe.db") || c.WarehouseLocation != "s3://fromenv" || c.WarehouseDir != filepath.Join(dir, "warehouse") ||
		c.EncryptionKeyFile != filepath.Join(dir, "keys", "warehouse.keys") || c.CredentialTTL != time.Hour || c.S3Listen != "127.0.0.1:9100" {
		t.Errorf("derived defaults: %q %q %q %q %s %q", c.Store, c.WarehouseLocation, c.WarehouseDir, c.EncryptionKeyFile, c.CredentialTTL, c.S3Listen)
	}
}

func TestConfig_Invalid(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		env  map[string]string
		yaml string
		want string
	}{
		{name: "bad warehouse", edit: func(c *Config) { c.Warehouse = "a/b" }, want: "warehouse"},
		{name: "ttl too short", edit: func(c *Config) { c.TokenTTL = time.Second }, want: "token_ttl"},
		{name: "no transaction statements", edit: func(c *Config) { c.SQLMaxTransactionStatements = 0 }, want: "sql_max_transaction_statements"},
		{name: "bad bootstrap", edit: func(c *Config) { c.BootstrapCredential = "nocolon" }, want: "client_id:secret"},
		{name: "bad env bool", env: map[string]string{"FLOE_DEMO": "maybe"}, want: "FLOE_DEMO"},
		{name: "bad env duration", env: map[string]string{"FLOE_TOKEN_TTL": "soon"}, want: "FLOE_TOKEN_TTL"},
		{name: "unknown yaml key", yaml: "lisen: x\n", want: "lisen"},
		{name: "bucket name", edit: func(c *Config) { c.Warehouse = "Big_WH" }, want: "bucket name"},
		{name: "credential ttl", env: map[string]string{"FLOE_CREDENTIAL_TTL": "13h"}, want: "credential_ttl"},
		{name: "sharing url ttl too long", env: map[string]string{"FLOE_SHARING_URL_TTL": "2h"}, want: "sharing_url_ttl"},
		{name: "sharing url ttl too short", yaml: "sharing_url_ttl: 10s\n", want: "sharing_url_ttl"},
		{name: "storage", env: map[string]string{"FLOE_STORAGE": "ftp"}, want: "storage"},
		{name: "s3 needs location", env: map[string]string{"FLOE_STORAGE": "s3", "FLOE_S3_ROLE_ARN": "arn:aws:iam::1:role/r"}, want: "warehouse_location"},
		{name: "s3 needs role", env: map[string]string{"FLOE_STORAGE": "s3", "FLOE_WAREHOUSE_LOCATION": "s3://b/w"}, want: "role_arn"},
		{name: "embedded location", env: map[string]string{"FLOE_WAREHOUSE_LOCATION": "s3://elsewhere"}, want: "embedded storage"},
		{name: "s3 public url", env: map[string]string{"FLOE_S3_PUBLIC_URL": "http://h:1/path"}, want: "s3_public_url"},
		{name: "audit export interval", env: map[string]string{"FLOE_AUDIT_EXPORT_INTERVAL": "50ms"}, want: "audit_export_interval"},
		{name: "negative audit export interval", edit: func(c *Config) { c.AuditExportInterval = -time.Second }, want: "audit_export_interval"},
		{name: "memory limit", env: map[string]string{"FLOE_MEMORY_LIMIT": "lots"}, want: "memory_limit"},
		{name: "memory limit share", yaml: "memory_limit: 0%\n", want: "memory_limit"},
		{name: "gc percent", env: map[string]string{"FLOE_GC_PERCENT": "-5"}, want: "gc_percent"},
		{name: "gc headroom", env: map[string]string{"FLOE_GC_HEADROOM": "-1"}, want: "gc_headroom"},
		{name: "gc percent not a number", env: map[string]string{"FLOE_GC_PERCENT": "lots"}, want: "FLOE_GC_PERCENT"},
		{name: "metadata cache", env: map[string]string{"FLOE_METADATA_CACHE_BYTES": "1000"}, want: "metadata_cache_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			c.DataDir = t.TempDir()
			var err error
			if tt.yaml != "" {
				f := filepath.Join(t.TempDir(), "c.yaml")
				_ = os.WriteFile(f, []byte(tt.yaml), 0o600)
				err = c.LoadFile(f)
			}
			if err == nil && tt.env != nil {
				err = c.LoadEnv(func(k string) string { return tt.env[k] })
			}
			if err == nil {
				if tt.edit != nil {
					tt.edit(&c)
				}
				err = c.Finish()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// TestConfig_Memory checks the memory settings' defaults and that each
// source sets them.
func TestConfig_Memory(t *testing.T) {
	c := Defaults()
	if c.MemoryLimit != "75%" || c.GCPercent != GCAuto || c.GCHeadroom != 160<<20 || c.MetadataCacheBytes != 128<<20 {
		t.Errorf("defaults: memory_limit %q gc_percent %d metadata_cache_bytes %d", c.MemoryLimit, c.GCPercent, c.MetadataCacheBytes)
	}
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte("memory_limit: 1GiB\ngc_percent: 150\nmetadata_cache_bytes: 33554432\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadFile(f); err != nil {
		t.Fatal(err)
	}
	if c.MemoryLimit != "1GiB" || c.GCPercent != 150 || c.MetadataCacheBytes != 32<<20 {
		t.Errorf("from YAML: %q %d %d", c.MemoryLimit, c.GCPercent, c.MetadataCacheBytes)
	}
	env := map[string]string{"FLOE_MEMORY_LIMIT": "60%", "FLOE_GC_PERCENT": "200", "FLOE_METADATA_CACHE_BYTES": "67108864"}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	c.DataDir = t.TempDir()
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.MemoryLimit != "60%" || c.GCPercent != 200 || c.MetadataCacheBytes != 64<<20 {
		t.Errorf("from env: %q %d %d", c.MemoryLimit, c.GCPercent, c.MetadataCacheBytes)
	}
}

// TestStreamFlushEnv: the micro-batch flush settings come from the
// environment too, and a bad value names its variable.
func TestStreamFlushEnv(t *testing.T) {
	c := Defaults()
	env := map[string]string{"FLOE_STREAM_FLUSH_INTERVAL": "2s", "FLOE_STREAM_FLUSH_ROWS": "500"}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.StreamFlushInterval != 2*time.Second || c.StreamFlushRows != 500 {
		t.Fatalf("StreamFlushInterval %v, StreamFlushRows %d", c.StreamFlushInterval, c.StreamFlushRows)
	}
	for k, v := range map[string]string{"FLOE_STREAM_FLUSH_INTERVAL": "soon", "FLOE_STREAM_FLUSH_ROWS": "many"} {
		c := Defaults()
		if err := c.LoadEnv(func(n string) string { return map[string]string{k: v}[n] }); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
