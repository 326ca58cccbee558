package app

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/maint"
)

// Config is Floe's whole configuration. Values come from defaults, then an
// optional YAML file, then FLOE_* environment variables, then flags (each
// overriding the one before). Each field's comment is its documentation.
type Config struct {
	// DataDir holds the SQLite metadata database and the local warehouse
	// (env FLOE_DATA_DIR, default "floe-data").
	DataDir string `yaml:"data_dir"`
	// Listen is the address of the Iceberg REST catalog (env FLOE_LISTEN, default 127.0.0.1:8181).
	Listen string `yaml:"listen"`
	// Store is the metadata store DSN: a SQLite path or a postgres:// URL
	// (env FLOE_STORE, default <data_dir>/floe.db).
	Store string `yaml:"store"`
	// Warehouse is the name of the default warehouse, sent as the REST
	// prefix (env FLOE_WAREHOUSE, default "floe").
	Warehouse string `yaml:"warehouse"`
	// WarehouseLocation is where table files live (env FLOE_WAREHOUSE_LOCATION,
	// default file://<data_dir>/warehouse). Must be inside the local root for the embedded store.
	WarehouseLocation string `yaml:"warehouse_location"`
	// TokenTTL is the lifetime of access tokens (env FLOE_TOKEN_TTL, default
	// 15m, at most 24h).
	TokenTTL time.Duration `yaml:"token_ttl"`
	// PublicURL is the URL clients reach this server at, e.g.
	// https://floe.example.com (env FLOE_PUBLIC_URL). It is the OAuth issuer:
	// the iss of Floe's tokens and the base of the endpoints advertised at
	// /.well-known/oauth-authorization-server. Nodes sharing a store must
	// share it. Default http://<listen address>.
	PublicURL string `yaml:"public_url"`
	// TrustedIssuers are external identity providers whose JWTs can be
	// exchanged for Floe tokens (YAML only): issuer, jwks_url, audience and
	// principal_claim (the claim naming the Floe principal, default sub).
	TrustedIssuers []auth.TrustedIssuer `yaml:"trusted_issuers"`
	// AuthFailuresPerMinute is how many failed authentication attempts each
	// client id and each client IP may make per minute at the token endpoint
	// before being answered 429 (env FLOE_AUTH_FAILURES_PER_MINUTE, default
	// 10; negative disables the limit).
	AuthFailuresPerMinute int `yaml:"auth_failures_per_minute"`
	// InsecureNoAuth turns authentication off. For throwaway local use only
	// (env FLOE_INSECURE_NO_AUTH).
	InsecureNoAuth bool `yaml:"insecure_no_auth"`
	// Demo loads the generated CRM demo dataset at start (env FLOE_DEMO).
	Demo bool `yaml:"demo"`
	// BootstrapCredential is "client_id:secret" for the first admin principal,
	// used only when no principal exists yet (env FLOE_BOOTSTRAP_CREDENTIAL).
	// When empty, a random secret is generated and printed once.
	BootstrapCredential string `yaml:"-"`
	// MaxBodyBytes bounds REST request bodies (env FLOE_MAX_BODY_BYTES, default 16 MiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// LogLevel is debug, info, warn or error (env FLOE_LOG_LEVEL, default info).
	LogLevel string `yaml:"log_level"`
	// LogFormat is text or json (env FLOE_LOG_FORMAT, default text).
	LogFormat string `yaml:"log_format"`
	// Maintenance runs table maintenance (snapshot expiry) in the background
	// (env FLOE_MAINTENANCE, default true). Nodes sharing a store share the
	// work: each job runs once per table per interval, on one node.
	Maintenance bool `yaml:"maintenance"`
	// MaintenanceInterval is the maintenance schedule tick (env
	// FLOE_MAINTENANCE_INTERVAL, default 1m). Nodes sharing a store must use
	// the same interval.
	MaintenanceInterval time.Duration `yaml:"maintenance_interval"`
	// MaintenanceLeaseTTL is how long a maintenance job's lease outlives its
	// node: after a crash, another node resumes the job once it expires (env
	// FLOE_MAINTENANCE_LEASE_TTL, default half the interval, at most 30s).
	MaintenanceLeaseTTL time.Duration `yaml:"maintenance_lease_ttl"`
	// SnapshotRetention is how old a snapshot may grow before maintenance
	// expires it, unless a table sets history.expire.max-snapshot-age-ms
	// (env FLOE_SNAPSHOT_RETENTION, default 120h).
	SnapshotRetention time.Duration `yaml:"snapshot_retention"`
	// MaintenanceHook, if set, runs before each maintenance job (tests use it
	// to observe or stall runs; not settable from YAML, env or flags).
	MaintenanceHook maint.Hook `yaml:"-"`
}

// Defaults returns the embedded-default configuration.
func Defaults() Config {
	return Config{
		DataDir:      "floe-data",
		Listen:       "127.0.0.1:8181",
		Warehouse:    "floe",
		TokenTTL:     15 * time.Minute,
		MaxBodyBytes: 16 << 20,
		LogLevel:     "info",
		LogFormat:    "text",

		Maintenance:         true,
		MaintenanceInterval: maint.DefaultInterval,
		SnapshotRetention:   maint.DefaultMaxSnapshotAge,
	}
}

// LoadFile merges a YAML file into c.
func (c *Config) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// LoadEnv merges FLOE_* variables from getenv into c.
func (c *Config) LoadEnv(getenv func(string) string) error {
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	str("FLOE_DATA_DIR", &c.DataDir)
	str("FLOE_LISTEN", &c.Listen)
	str("FLOE_STORE", &c.Store)
	str("FLOE_WAREHOUSE", &c.Warehouse)
	str("FLOE_WAREHOUSE_LOCATION", &c.WarehouseLocation)
	str("FLOE_BOOTSTRAP_CREDENTIAL", &c.BootstrapCredential)
	str("FLOE_LOG_LEVEL", &c.LogLevel)
	str("FLOE_LOG_FORMAT", &c.LogFormat)
	str("FLOE_PUBLIC_URL", &c.PublicURL)
	if v := getenv("FLOE_AUTH_FAILURES_PER_MINUTE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("FLOE_AUTH_FAILURES_PER_MINUTE: %w", err)
		}
		c.AuthFailuresPerMinute = n
	}
	if v := getenv("FLOE_TOKEN_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("FLOE_TOKEN_TTL: %w", err)
		}
		c.TokenTTL = d
	}
	for name, dst := range map[string]*time.Duration{"FLOE_MAINTENANCE_INTERVAL": &c.MaintenanceInterval,
		"FLOE_MAINTENANCE_LEASE_TTL": &c.MaintenanceLeaseTTL, "FLOE_SNAPSHOT_RETENTION": &c.SnapshotRetention} {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = d
		}
	}
	for name, dst := range map[string]*bool{"FLOE_INSECURE_NO_AUTH": &c.InsecureNoAuth, "FLOE_DEMO": &c.Demo, "FLOE_MAINTENANCE": &c.Maintenance} {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = b
		}
	}
	if v := getenv("FLOE_MAX_BODY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("FLOE_MAX_BODY_BYTES: %w", err)
		}
		c.MaxBodyBytes = n
	}
	return nil
}

// Finish fills derived defaults and validates c.
func (c *Config) Finish() error {
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	c.DataDir = abs
	if c.Store == "" {
		c.Store = filepath.Join(c.DataDir, "floe.db")
	}
	if c.WarehouseLocation == "" {
		c.WarehouseLocation = "file://" + filepath.ToSlash(filepath.Join(c.DataDir, "warehouse"))
	}
	switch {
	case c.Warehouse == "" || strings.ContainsAny(c.Warehouse, "/ \t?#%"):
		return fmt.Errorf("warehouse %q: must be non-empty without '/', spaces, '?', '#' or '%%'", c.Warehouse)
	case c.TokenTTL < time.Minute || c.TokenTTL > 24*time.Hour:
		return fmt.Errorf("token_ttl %s: must be between 1m and 24h", c.TokenTTL)
	case c.MaxBodyBytes < 1<<10:
		return fmt.Errorf("max_body_bytes %d: must be at least 1024", c.MaxBodyBytes)
	case c.MaintenanceInterval < 10*time.Millisecond:
		return fmt.Errorf("maintenance_interval %s: must be at least 10ms", c.MaintenanceInterval)
	case c.MaintenanceLeaseTTL < 0:
		return fmt.Errorf("maintenance_lease_ttl %s: must not be negative", c.MaintenanceLeaseTTL)
	case c.SnapshotRetention <= 0:
		return fmt.Errorf("snapshot_retention %s: must be positive", c.SnapshotRetention)
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("public_url %q: must be an http or https URL without query or fragment", c.PublicURL)
		}
		c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	}
	for _, ti := range c.TrustedIssuers {
		if err := ti.Validate(); err != nil {
			return err
		}
	}
	if c.BootstrapCredential != "" && !strings.Contains(c.BootstrapCredential, ":") {
		return fmt.Errorf("FLOE_BOOTSTRAP_CREDENTIAL must be client_id:secret")
	}
	return nil
}
