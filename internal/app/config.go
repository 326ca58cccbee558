package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"gopkg.in/yaml.v3"

	"github.com/floe-lake/floe/catalog"

	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/auth"
	"github.com/floe-lake/floe/federation"
	"github.com/floe-lake/floe/internal/netlimit"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/restcat"
	"github.com/floe-lake/floe/sharing"
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
	// Storage is where table files live (env FLOE_STORAGE): "embedded"
	// (default: Floe's own S3-compatible endpoint over WarehouseDir) or
	// "s3" (AWS S3 or an S3-compatible store at WarehouseLocation, with
	// credentials vended through STS; see S3).
	Storage string `yaml:"storage"`
	// WarehouseDir is the directory the embedded store keeps table files in
	// (env FLOE_WAREHOUSE_DIR, default <data_dir>/warehouse). It is served
	// as the bucket named after the warehouse.
	WarehouseDir string `yaml:"warehouse_dir"`
	// ColdDir is the cold tier of the embedded store (env FLOE_COLD_DIR,
	// default <data_dir>/cold; "off" for none): lifecycle maintenance moves
	// data files only old snapshots reference there, and reads find them
	// there transparently. It may be another (cheaper, slower) disk.
	ColdDir string `yaml:"cold_dir"`
	// WarehouseLocation is the URI of the warehouse root (env
	// FLOE_WAREHOUSE_LOCATION). Embedded storage: always s3://<warehouse>
	// (a file:// URI here is taken as WarehouseDir). Storage "s3":
	// required, e.g. s3://my-bucket/floe.
	WarehouseLocation string `yaml:"warehouse_location"`
	// S3Listen is the address of the embedded S3 endpoint (env
	// FLOE_S3_LISTEN, default 127.0.0.1:9100; "off" disables it, and with it
	// credential vending on embedded storage).
	S3Listen string `yaml:"s3_listen"`
	// S3PublicURL is the URL engines reach the embedded S3 endpoint at,
	// handed out as s3.endpoint (env FLOE_S3_PUBLIC_URL, default
	// http://<s3_listen address>).
	S3PublicURL string `yaml:"s3_public_url"`
	// Region is the S3 signing region (env FLOE_REGION, default us-east-1).
	// For storage "s3" it is the bucket's region.
	Region string `yaml:"region"`
	// CredentialTTL is the lifetime of vended storage credentials (env
	// FLOE_CREDENTIAL_TTL, 15m to 12h; default 1h for the embedded store,
	// 15m for storage "s3", whose STS credentials cannot be recalled).
	CredentialTTL time.Duration `yaml:"credential_ttl"`
	// SharingURLTTL is the lifetime of the pre-signed file URLs the Delta
	// Sharing server hands recipients (env FLOE_SHARING_URL_TTL, 1m to 1h,
	// default 15m).
	SharingURLTTL time.Duration `yaml:"sharing_url_ttl"`
	// SharingResolver, if set, authenticates recipients and resolves
	// shared names for the protocol servers in place of the sharing
	// service (tests use a fake): the Delta Sharing server under
	// /delta-sharing and every share's Iceberg REST catalog under
	// /shares/<share>/iceberg. Not settable from YAML, env or flags.
	SharingResolver sharing.Resolver `yaml:"-"`
	// FederatedCatalogs are remote Iceberg REST catalogs served as
	// warehouses of this server, read in place and governed by Floe's
	// grants (docs/federation.md). Env FLOE_FEDERATED_CATALOGS: the same
	// list as JSON. Secrets come from the environment variables the
	// entries name (token_env, client_secret_env).
	FederatedCatalogs []federation.Catalog `yaml:"federated_catalogs"`
	// ForeignResolver, if set, replaces the federated catalogs' clients
	// (tests serve fakes): it returns the foreign catalog served as
	// warehouse name, or nil. Not settable from YAML, env or flags.
	ForeignResolver func(name string) restcat.Foreign `yaml:"-"`
	// Getenv reads the environment variables federated catalogs name
	// (set by LoadEnv; default os.Getenv).
	Getenv func(string) string `yaml:"-"`
	// Encryption encrypts every object of the embedded store at rest with
	// AES-256-GCM (env FLOE_ENCRYPTION, default true).
	Encryption bool `yaml:"encryption"`
	// EncryptionKeyFile holds the warehouse keys (env
	// FLOE_ENCRYPTION_KEY_FILE): lines "<id> <base64 32 bytes>", the last is
	// current; mode 0600. Default <data_dir>/keys/warehouse.keys, created
	// with a fresh key on first start. Keep it off the data disk in
	// production: whoever has both can read the data.
	EncryptionKeyFile string `yaml:"encryption_key_file"`
	// EncryptionKey is a base64 warehouse key given directly (env
	// FLOE_ENCRYPTION_KEY only); it takes precedence over the key file.
	EncryptionKey string `yaml:"-"`
	// KeyWrapper wraps the secrets of the metadata store (token-signing and
	// credential-sealing keys) and, with Encryption, the data keys of the
	// embedded store's objects (env FLOE_KEY_WRAPPER, flag --key-wrapper):
	// "local" (default: the warehouse keys of EncryptionKeyFile or
	// EncryptionKey; the default key file is created on first start even
	// with encryption off or storage s3) or "kms" (the AWS KMS key KMSKeyID).
	KeyWrapper string `yaml:"key_wrapper"`
	// KMSKeyID is the customer-managed AWS KMS key of key_wrapper kms: key
	// id, key ARN, alias name or alias ARN (env FLOE_KMS_KEY_ID, flag
	// --kms-key-id). Changing it re-wraps the store's secrets on next start.
	KMSKeyID string `yaml:"kms_key_id"`
	// KMSRegion is the region of the KMS key (env FLOE_KMS_REGION, flag
	// --kms-region; default region).
	KMSRegion string `yaml:"kms_region"`
	// KMSEndpoint overrides the KMS endpoint, for a VPC endpoint or an
	// emulator (env FLOE_KMS_ENDPOINT, flag --kms-endpoint).
	KMSEndpoint string `yaml:"kms_endpoint"`
	// S3 configures external S3 storage (storage "s3").
	S3 ExternalS3 `yaml:"s3"`
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
	// Network holds the CIDR allowlists of the listeners and the trusted
	// proxies (rest_allow_cidrs, s3_allow_cidrs, sql_allow_cidrs,
	// trusted_proxies; see Allowlists).
	Network Allowlists `yaml:",inline"`
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
	// Console serves the web console under /console/ on the catalog
	// listener: "on" (default) or "off" (env FLOE_CONSOLE).
	Console string `yaml:"console"`
	// ConsoleMaxSessions bounds the console's signed-in sessions, kept in
	// the metadata store and shared by every node on it (env
	// FLOE_CONSOLE_MAX_SESSIONS, default 10000); when full, the session
	// expiring first is ended and its token revoked.
	ConsoleMaxSessions int `yaml:"console_max_sessions"`
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
	// Maintenance runs table maintenance (compaction, manifest rewriting,
	// snapshot expiry, orphan removal, lifecycle) in the background
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
	// AuditExportInterval is how often the audit log is appended to the
	// Iceberg table system.audit of the default warehouse (env
	// FLOE_AUDIT_EXPORT_INTERVAL, default 10s; 0 turns the export off).
	// Nodes sharing a store take turns; each record is exported once.
	AuditExportInterval time.Duration `yaml:"audit_export_interval"`
	// AuditRetention is how long audit records stay in the metadata store
	// (env FLOE_AUDIT_RETENTION, default 720h = 30 days; 0 keeps them
	// forever). Older records are pruned in the background behind a signed
	// checkpoint that keeps the hash chain verifiable (docs/audit.md).
	AuditRetention time.Duration `yaml:"audit_retention"`
	// AuditPruneInterval is how often a node looks for audit records older
	// than the retention (env FLOE_AUDIT_PRUNE_INTERVAL, default 1m); nodes
	// sharing a store take turns through a lease.
	AuditPruneInterval time.Duration `yaml:"audit_prune_interval"`
	// ProductsCheckInterval is how often a node looks for data products
	// whose scheduled expectation checks are due (env
	// FLOE_PRODUCTS_CHECK_INTERVAL, default 1m; 0 turns scheduled checks
	// off, checks on demand still run). Nodes take turns per product
	// through a lease.
	ProductsCheckInterval time.Duration `yaml:"products_check_interval"`
	// AuditPruneBatch is the most records one prune transaction deletes
	// (env FLOE_AUDIT_PRUNE_BATCH, default 5000, at most 100000).
	AuditPruneBatch int `yaml:"audit_prune_batch"`
	// AuditCheckpointInterval is how often a node writes a signed checkpoint
	// of the audit chain's head into the warehouse, as an immutable object
	// under _floe/audit/checkpoints/ (env FLOE_AUDIT_CHECKPOINT_INTERVAL,
	// default 1m; 0 turns it off). A node also writes one when it stops.
	// `floe audit verify` checks the store against them (docs/audit.md).
	AuditCheckpointInterval time.Duration `yaml:"audit_checkpoint_interval"`
	// StreamFlushInterval and StreamFlushRows say when rows sent to the
	// micro-batch endpoint .../stream are committed: every interval, or as
	// soon as a table has that many buffered (env FLOE_STREAM_FLUSH_INTERVAL
	// and FLOE_STREAM_FLUSH_ROWS; defaults 5s and 100000).
	StreamFlushInterval time.Duration `yaml:"stream_flush_interval"`
	StreamFlushRows     int64         `yaml:"stream_flush_rows"`
	// SQLListen is the address of the PostgreSQL-wire SQL endpoint (env
	// FLOE_SQL_LISTEN, default 127.0.0.1:5433; "off" or "" disables it).
	SQLListen string `yaml:"sql_listen"`
	// AdminListen is the address of the admin listener, which serves
	// Prometheus metrics at /metrics and the /healthz and /readyz probes,
	// and nothing of the catalog (env FLOE_ADMIN_LISTEN, default
	// 127.0.0.1:9090; "off" or "" disables it, and with it metrics
	// collection).
	AdminListen string `yaml:"admin_listen"`
	// TracingOTLPEndpoint turns OpenTelemetry tracing on and sends spans
	// to this OTLP/HTTP endpoint (env FLOE_TRACING_OTLP_ENDPOINT; e.g.
	// http://collector:4318, to which /v1/traces is added when the URL has
	// no path). Unset, the standard OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turns it on; with neither,
	// tracing is off.
	TracingOTLPEndpoint string `yaml:"tracing_otlp_endpoint"`
	// TracingSampleRatio samples this fraction of new traces, in (0, 1]
	// (env FLOE_TRACING_SAMPLE_RATIO); a sampled incoming traceparent is
	// always followed. 0 (default): OTEL_TRACES_SAMPLER decides, and
	// without it every trace is sampled.
	TracingSampleRatio float64 `yaml:"tracing_sample_ratio"`
	// SpanProcessor, when set, receives every span whatever the endpoint
	// (tests use the SDK's in-memory recorder); it has no YAML or env form.
	SpanProcessor sdktrace.SpanProcessor `yaml:"-"`
	// SQLTLSCert and SQLTLSKey are PEM files of the SQL endpoint's TLS
	// certificate and key (env FLOE_SQL_TLS_CERT, FLOE_SQL_TLS_KEY); without
	// them clients must connect over loopback to send a token.
	SQLTLSCert string `yaml:"sql_tls_cert"`
	SQLTLSKey  string `yaml:"sql_tls_key"`
	// TLSCert and TLSKey are PEM files of the certificate (with its chain)
	// and key that every listener serves: the REST catalog, the S3 endpoint
	// and the SQL endpoint (env FLOE_TLS_CERT, FLOE_TLS_KEY, flags
	// --tls-cert, --tls-key; default none: plaintext). The files are re-read
	// when they change, at most once a second. See docs/security.md, "TLS".
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// RESTTLSCert and RESTTLSKey override TLSCert and TLSKey for the REST
	// catalog listener (env FLOE_REST_TLS_CERT, FLOE_REST_TLS_KEY);
	// S3TLSCert and S3TLSKey for the embedded S3 endpoint (env
	// FLOE_S3_TLS_CERT, FLOE_S3_TLS_KEY). SQLTLSCert and SQLTLSKey are the
	// SQL endpoint's override.
	RESTTLSCert string `yaml:"rest_tls_cert"`
	RESTTLSKey  string `yaml:"rest_tls_key"`
	S3TLSCert   string `yaml:"s3_tls_cert"`
	S3TLSKey    string `yaml:"s3_tls_key"`
	// TLSSelfSigned makes a local CA and a server certificate in
	// <data_dir>/tls on first start, reuses them after, and serves it on
	// every listener without a certificate of its own (env
	// FLOE_TLS_SELF_SIGNED, flag --tls-self-signed; default false). For a
	// development machine: clients must be told to trust <data_dir>/tls/ca.pem.
	TLSSelfSigned bool `yaml:"tls_self_signed"`
	// TLSClientCA is a PEM file of the CA certificates that issue client
	// certificates (env FLOE_TLS_CLIENT_CA). Required when a listener's
	// client certificate policy is not off.
	TLSClientCA string `yaml:"tls_client_ca"`
	// RESTTLSClientAuth and S3TLSClientAuth are the client certificate
	// policies of the REST catalog and S3 listeners (env
	// FLOE_REST_TLS_CLIENT_AUTH, FLOE_S3_TLS_CLIENT_AUTH): off (default),
	// optional (a certificate, if sent, must be issued by tls_client_ca) or
	// require (the handshake fails without one).
	RESTTLSClientAuth string `yaml:"rest_tls_client_auth"`
	S3TLSClientAuth   string `yaml:"s3_tls_client_auth"`
	// TLSClientPrincipals maps client certificate identities to principal
	// names: keys "cn:<subject common name>" or "uri:<URI SAN>" (YAML map;
	// env FLOE_TLS_CLIENT_PRINCIPALS as "cn:etl-job=etl,uri:spiffe://x/bi=bi").
	// A verified certificate no key names is refused.
	TLSClientPrincipals map[string]string `yaml:"tls_client_principals"`
	// SQLMemoryLimit is DuckDB's memory limit per SQL session (env
	// FLOE_SQL_MEMORY_LIMIT, default 2GB).
	SQLMemoryLimit string `yaml:"sql_memory_limit"`
	// SQLThreads is DuckDB's thread count per SQL session (env
	// FLOE_SQL_THREADS, default 0: one per core).
	SQLThreads int `yaml:"sql_threads"`
	// SQLCacheBytes bounds the decrypted (or downloaded) data files the SQL
	// endpoint keeps in memory (env FLOE_SQL_CACHE_BYTES, default 1 GiB).
	SQLCacheBytes int64 `yaml:"sql_cache_bytes"`
	// SQLTableCacheBytes bounds, per SQL session, the files of small tables
	// kept decoded in memory (env FLOE_SQL_TABLE_CACHE_BYTES, default 16 MiB;
	// negative: off). See docs/sql.md.
	SQLTableCacheBytes int64 `yaml:"sql_table_cache_bytes"`
	// SQLCacheFiles bounds the number of data files the SQL endpoint keeps
	// in memory, each an open descriptor (env FLOE_SQL_CACHE_FILES, default
	// 256). A query pins the files it reads while it runs; afterwards at
	// most this many stay open.
	SQLCacheFiles int `yaml:"sql_cache_files"`
	// SQLMaxTransactionStatements bounds the table changes (DML and DDL
	// statements) one SQL transaction block stages before COMMIT (env
	// FLOE_SQL_MAX_TRANSACTION_STATEMENTS, default 1000). See docs/sql.md.
	SQLMaxTransactionStatements int `yaml:"sql_max_transaction_statements"`
	// SQLMaxTempTables bounds the temporary tables (CREATE TEMPORARY TABLE)
	// one SQL session holds at once (env FLOE_SQL_MAX_TEMP_TABLES, default
	// 64). See docs/sql.md.
	SQLMaxTempTables int `yaml:"sql_max_temp_tables"`
	// SQLMaxTempRows bounds the rows of all temporary tables of one SQL
	// session together (env FLOE_SQL_MAX_TEMP_ROWS, default 10000000);
	// their bytes count against sql_memory_limit. See docs/sql.md.
	SQLMaxTempRows int `yaml:"sql_max_temp_rows"`
	// SQLViewTrinoCatalog is the name Trino deployments give this
	// catalog (env FLOE_SQL_VIEW_TRINO_CATALOG, default: the warehouse's
	// name): the trino representation of a view the SQL endpoint creates
	// names its tables in it. See docs/sql.md.
	SQLViewTrinoCatalog string `yaml:"sql_view_trino_catalog"`
	// SQLMaxStatementTimeout bounds every SQL statement's run (env
	// FLOE_SQL_MAX_STATEMENT_TIMEOUT, flag --sql-max-statement-timeout,
	// default 15m): a session's statement_timeout above it, or none, is
	// taken as this; the statement is cancelled with SQLSTATE 57014.
	SQLMaxStatementTimeout time.Duration `yaml:"sql_max_statement_timeout"`
	// SQLStartupTimeout bounds a SQL connection's TLS negotiation, startup
	// and authentication (env FLOE_SQL_STARTUP_TIMEOUT, default 10s).
	SQLStartupTimeout time.Duration `yaml:"sql_startup_timeout"`
	// SQLMaxUnauthenticated bounds the SQL connections that have not
	// authenticated yet (env FLOE_SQL_MAX_UNAUTHENTICATED, default 512); a
	// new one beyond it evicts the oldest waiting one.
	SQLMaxUnauthenticated int `yaml:"sql_max_unauthenticated"`
	// SQLMaxUnauthenticatedPerIP is SQLMaxUnauthenticated per client address
	// (an IPv6 /64) (env FLOE_SQL_MAX_UNAUTHENTICATED_PER_IP, default 128).
	SQLMaxUnauthenticatedPerIP int `yaml:"sql_max_unauthenticated_per_ip"`
	// SQLMaxConnections bounds the authenticated SQL sessions (env
	// FLOE_SQL_MAX_CONNECTIONS, default 256); further logins get 53300.
	SQLMaxConnections int `yaml:"sql_max_connections"`
	// SQLLoginFailuresPerMinute is how many failed SQL logins one user may
	// have from one client address per minute before further logins of
	// that user from there are refused (SQLSTATE 08004) until the budget
	// refills (env FLOE_SQL_LOGIN_FAILURES_PER_MINUTE, default 10; negative
	// disables the limit).
	SQLLoginFailuresPerMinute int `yaml:"sql_login_failures_per_minute"`
	// MemoryLimit is the Go runtime's soft memory limit (env
	// FLOE_MEMORY_LIMIT; GOMEMLIMIT in the environment wins): a size such
	// as 2GiB, a share of the memory available to the process such as 75%
	// (of the lower of the machine's memory and its cgroup limit; the
	// default), or off. Near the limit the collector runs more often
	// instead of letting the heap grow. See docs/operations.md, "Memory".
	MemoryLimit string `yaml:"memory_limit"`
	// GCPercent is the garbage collector's target percentage (env
	// FLOE_GC_PERCENT; GOGC in the environment wins; -1 turns the collector
	// off until the memory limit is reached). The default, 0 (also "auto"),
	// tunes it after every collection so that the heap has GCHeadroom of
	// room above the live data, within 100 and 400.
	GCPercent int `yaml:"gc_percent"`
	// GCHeadroom is the heap room above the live data that gc_percent auto
	// aims for (env FLOE_GC_HEADROOM, default 160 MiB).
	GCHeadroom int64 `yaml:"gc_headroom"`
	// MetadataCacheBytes bounds the estimated resident memory of the parsed
	// metadata Floe caches (env FLOE_METADATA_CACHE_BYTES, default 128 MiB):
	// three quarters for table and view metadata files, one quarter for the
	// SQL endpoint's scan plans. The estimate includes the parsed form, not
	// just the JSON.
	MetadataCacheBytes int64 `yaml:"metadata_cache_bytes"`
	// MaintenanceJobs names the jobs the background scheduler runs (env
	// FLOE_MAINTENANCE_JOBS, comma-separated; default all: expire-snapshots,
	// compact, rewrite-manifests, remove-orphans, lifecycle). See docs/maintenance.md.
	MaintenanceJobs []string `yaml:"maintenance_jobs"`
	// AllowedLocations are storage location prefixes, besides the
	// warehouse root (always allowed), where table and view locations and
	// namespace "location" properties may lie (flag --allowed-locations, env
	// FLOE_ALLOWED_LOCATIONS, comma-separated), e.g. file:///srv/lake or
	// s3://other-bucket/prefix. Default none: the warehouse root only.
	// Floe reads and writes metadata there with its own storage, so only
	// roots that storage reaches are useful. See docs/configuration.md.
	AllowedLocations []string `yaml:"allowed_locations"`
	// HTTP bounds every HTTP listener: the REST catalog (with the OAuth
	// token endpoint and the management API) and the embedded S3 endpoint.
	// See docs/security.md, "HTTP listener limits".
	HTTP HTTPLimits `yaml:"http"`
	// MaintenanceHook, if set, runs before each maintenance job (tests use it
	// to observe or stall runs; not settable from YAML, env or flags).
	MaintenanceHook maint.Hook `yaml:"-"`
	// Purge configures how drops with purge delete a table's files (YAML
	// purge; see PurgeSettings and docs/maintenance.md).
	Purge PurgeSettings `yaml:"purge"`
	// PurgeHook, if set, runs before each file a purge deletes; an error
	// stops the run there (tests use it; not settable from YAML, env or flags).
	PurgeHook func(ctx context.Context, file string) error `yaml:"-"`
	// Sharing bounds shares, objects, recipients and tokens (YAML sharing;
	// see SharingSettings and docs/sharing.md).
	Sharing SharingSettings `yaml:"sharing"`
	// ScanPlanning configures server-side scan planning in the REST catalog
	// (YAML scan_planning; see ScanPlanningSettings and docs/rest-catalog.md).
	ScanPlanning ScanPlanningSettings `yaml:"scan_planning"`
}

// ScanPlanningSettings configures server-side scan planning (planTableScan
// and its companions). Zero values mean the defaults.
type ScanPlanningSettings struct {
	// Disabled leaves the planning routes out (env
	// FLOE_SCAN_PLANNING_DISABLED=true): clients then plan on their side.
	Disabled bool `yaml:"disabled"`
	// PageSize is the number of file scan tasks per response; a larger
	// plan pages through plan tasks (env FLOE_SCAN_PLANNING_PAGE_SIZE,
	// default 1000).
	PageSize int `yaml:"page_size"`
	// CacheEntries bounds the plans kept for paging and reuse (env
	// FLOE_SCAN_PLANNING_CACHE_ENTRIES, default 256).
	CacheEntries int `yaml:"cache_entries"`
	// CacheBytes bounds their encoded size (env
	// FLOE_SCAN_PLANNING_CACHE_BYTES, default 64 MiB).
	CacheBytes int64 `yaml:"cache_bytes"`
	// TTL is how long a plan id and its plan tasks stay valid (env
	// FLOE_SCAN_PLANNING_TTL, default 15m, never above credential_ttl).
	TTL time.Duration `yaml:"ttl"`
	// AsyncThresholdFiles is the number of files of the planned snapshot
	// above which a plan runs in the background ("submitted") (env
	// FLOE_SCAN_PLANNING_ASYNC_THRESHOLD_FILES, default 20000; -1: never).
	AsyncThresholdFiles int `yaml:"async_threshold_files"`
	// AsyncWorkers is the number of background plans run at once (env
	// FLOE_SCAN_PLANNING_ASYNC_WORKERS, default 2).
	AsyncWorkers int `yaml:"async_workers"`
	// AsyncQueue bounds the background plans submitted and not finished
	// (env FLOE_SCAN_PLANNING_ASYNC_QUEUE, default 64); AsyncPerPrincipal
	// those of one principal (env FLOE_SCAN_PLANNING_ASYNC_PER_PRINCIPAL,
	// default 4). Beyond either, planTableScan answers 503.
	AsyncQueue        int `yaml:"async_queue"`
	AsyncPerPrincipal int `yaml:"async_per_principal"`
	// ManifestCacheBytes bounds the manifest lists and manifests kept in
	// memory for planning (env FLOE_SCAN_PLANNING_MANIFEST_CACHE_BYTES,
	// default 128 MiB; -1: none).
	ManifestCacheBytes int64 `yaml:"manifest_cache_bytes"`
}

func (s ScanPlanningSettings) validate() error {
	switch {
	case s.PageSize < 0 || s.PageSize > 100_000:
		return fmt.Errorf("scan_planning.page_size %d: must be between 1 and 100000", s.PageSize)
	case s.CacheEntries < 0:
		return fmt.Errorf("scan_planning.cache_entries %d: must not be negative", s.CacheEntries)
	case s.CacheBytes < 0:
		return fmt.Errorf("scan_planning.cache_bytes %d: must not be negative", s.CacheBytes)
	case s.TTL < 0:
		return fmt.Errorf("scan_planning.ttl %s: must not be negative", s.TTL)
	case s.AsyncThresholdFiles < -1:
		return fmt.Errorf("scan_planning.async_threshold_files %d: must be -1 (never) or more", s.AsyncThresholdFiles)
	case s.AsyncWorkers < 0 || s.AsyncWorkers > 64:
		return fmt.Errorf("scan_planning.async_workers %d: must be between 1 and 64", s.AsyncWorkers)
	case s.ManifestCacheBytes < -1:
		return fmt.Errorf("scan_planning.manifest_cache_bytes %d: must be -1 (none) or more", s.ManifestCacheBytes)
	case s.AsyncQueue < 0 || s.AsyncPerPrincipal < 0:
		return fmt.Errorf("scan_planning.async_queue and async_per_principal must not be negative")
	}
	return nil
}

// HTTPLimits bounds what a caller can hold on an HTTP listener. Each
// listener applies them on its own.
type HTTPLimits struct {
	// MaxConns caps the connections one listener holds (env
	// FLOE_HTTP_MAX_CONNS, default 1024). At the cap, a new connection
	// closes the oldest idle connection, else the oldest one still sending
	// its request; it is refused only when every connection is being served.
	MaxConns int `yaml:"max_conns"`
	// MaxPendingPerIP caps, per client IP, the connections still sending a
	// request (headers or body) on one listener (env
	// FLOE_HTTP_MAX_PENDING_PER_IP, default 256). Over it, the oldest of
	// that IP's pending connections is closed.
	MaxPendingPerIP int `yaml:"max_pending_per_ip"`
	// HeaderTimeout is how long a client may take to send request headers
	// (env FLOE_HTTP_HEADER_TIMEOUT, default 10s).
	HeaderTimeout time.Duration `yaml:"header_timeout"`
	// BodyTimeout is how long a request body may stall: no read may wait
	// longer, and a body must arrive within it plus its size at
	// BodyMinRate (env FLOE_HTTP_BODY_TIMEOUT, default 30s).
	BodyTimeout time.Duration `yaml:"body_timeout"`
	// BodyMinRate is the slowest average rate, in bytes per second, a
	// request body may arrive at after BodyTimeout (env
	// FLOE_HTTP_BODY_MIN_RATE, default 65536).
	BodyMinRate int64 `yaml:"body_min_rate"`
	// IdleTimeout closes keep-alive connections idle this long (env
	// FLOE_HTTP_IDLE_TIMEOUT, default 2m).
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxHeaderBytes bounds request headers (env FLOE_HTTP_MAX_HEADER_BYTES,
	// default 65536).
	MaxHeaderBytes int `yaml:"max_header_bytes"`
}

// ExternalS3 configures a warehouse on AWS S3 or an S3-compatible store.
// Floe itself uses the AWS default credential chain (environment, shared
// config, instance role); engines get credentials from STS AssumeRole of
// RoleARN with a session policy scoped to one table.
type ExternalS3 struct {
	// Endpoint is a custom S3 endpoint (env FLOE_S3_ENDPOINT; "" = AWS).
	Endpoint string `yaml:"endpoint"`
	// PathStyle addresses buckets by path (env FLOE_S3_PATH_STYLE).
	PathStyle bool `yaml:"path_style"`
	// RoleARN is the role vended credentials assume (env FLOE_S3_ROLE_ARN).
	RoleARN string `yaml:"role_arn"`
	// ExternalID is passed to AssumeRole (env FLOE_S3_EXTERNAL_ID).
	ExternalID string `yaml:"external_id"`
	// STSEndpoint is a custom STS endpoint (env FLOE_STS_ENDPOINT; "" = AWS).
	STSEndpoint string `yaml:"sts_endpoint"`
}

// DefaultAdminListen is admin_listen's default.
const DefaultAdminListen = "127.0.0.1:9090"

// adminEnabled reports whether the admin listener runs.
func (c Config) adminEnabled() bool { return c.AdminListen != "" && c.AdminListen != "off" }

// Defaults returns the embedded-default configuration.
func Defaults() Config {
	return Config{
		DataDir:       "floe-data",
		Listen:        "127.0.0.1:8181",
		Warehouse:     "floe",
		Storage:       "embedded",
		S3Listen:      "127.0.0.1:9100",
		Region:        "us-east-1",
		Encryption:    true,
		CredentialTTL: 0, // set by Finish: 1h, or 15m for storage s3
		SharingURLTTL: 15 * time.Minute,
		TokenTTL:      15 * time.Minute,
		MaxBodyBytes:  16 << 20,
		LogLevel:      "info",
		LogFormat:     "text",

		Maintenance:         true,
		MaintenanceInterval: maint.DefaultInterval,
		Purge:               defaultPurge(),
		Sharing:             defaultSharing(),
		SnapshotRetention:   maint.DefaultMaxSnapshotAge,

		AuditExportInterval:   10 * time.Second,
		AuditRetention:        30 * 24 * time.Hour,
		AuditPruneInterval:    time.Minute,
		ProductsCheckInterval: time.Minute,
		AuditPruneBatch:       audit.DefaultPruneBatch,

		AuditCheckpointInterval: time.Minute,

		SQLListen:      "127.0.0.1:5433",
		Console:        "on",
		AdminListen:    DefaultAdminListen,
		SQLMemoryLimit: "2GB",
		SQLCacheBytes:  1 << 30,

		SQLTableCacheBytes: 16 << 20,

		HTTP: HTTPLimits{MaxConns: 1024, MaxPendingPerIP: 256, HeaderTimeout: 10 * time.Second,
			BodyTimeout: 30 * time.Second, BodyMinRate: 64 << 10, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10},
		SQLCacheFiles:               256,
		SQLMaxTransactionStatements: 1000,
		SQLMaxTempTables:            64,
		SQLMaxTempRows:              10_000_000,
		SQLMaxStatementTimeout:      15 * time.Minute,
		SQLStartupTimeout:           10 * time.Second,
		SQLMaxUnauthenticated:       512,
		SQLMaxUnauthenticatedPerIP:  128,
		SQLMaxConnections:           256,
		SQLLoginFailuresPerMinute:   10,
		MemoryLimit:                 DefaultMemoryLimit,
		GCPercent:                   DefaultGCPercent,
		GCHeadroom:                  DefaultGCHeadroom,
		MetadataCacheBytes:          DefaultMetadataCacheBytes,
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
	c.Getenv = getenv
	if v := getenv("FLOE_FEDERATED_CATALOGS"); v != "" {
		var cs []federation.Catalog
		if err := json.Unmarshal([]byte(v), &cs); err != nil {
			return fmt.Errorf("FLOE_FEDERATED_CATALOGS: a JSON list of catalogs: %w", err)
		}
		c.FederatedCatalogs = cs
	}
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	str("FLOE_DATA_DIR", &c.DataDir)
	str("FLOE_LISTEN", &c.Listen)
	str("FLOE_STORE", &c.Store)
	str("FLOE_WAREHOUSE", &c.Warehouse)
	str("FLOE_SQL_VIEW_TRINO_CATALOG", &c.SQLViewTrinoCatalog)
	str("FLOE_WAREHOUSE_LOCATION", &c.WarehouseLocation)
	str("FLOE_BOOTSTRAP_CREDENTIAL", &c.BootstrapCredential)
	str("FLOE_LOG_LEVEL", &c.LogLevel)
	str("FLOE_LOG_FORMAT", &c.LogFormat)
	str("FLOE_PUBLIC_URL", &c.PublicURL)
	str("FLOE_STORAGE", &c.Storage)
	str("FLOE_WAREHOUSE_DIR", &c.WarehouseDir)
	str("FLOE_COLD_DIR", &c.ColdDir)
	str("FLOE_S3_LISTEN", &c.S3Listen)
	str("FLOE_S3_PUBLIC_URL", &c.S3PublicURL)
	str("FLOE_REGION", &c.Region)
	str("FLOE_ENCRYPTION_KEY_FILE", &c.EncryptionKeyFile)
	str("FLOE_ENCRYPTION_KEY", &c.EncryptionKey)
	str("FLOE_KEY_WRAPPER", &c.KeyWrapper)
	str("FLOE_KMS_KEY_ID", &c.KMSKeyID)
	str("FLOE_KMS_REGION", &c.KMSRegion)
	str("FLOE_KMS_ENDPOINT", &c.KMSEndpoint)
	str("FLOE_S3_ENDPOINT", &c.S3.Endpoint)
	str("FLOE_S3_ROLE_ARN", &c.S3.RoleARN)
	str("FLOE_S3_EXTERNAL_ID", &c.S3.ExternalID)
	str("FLOE_STS_ENDPOINT", &c.S3.STSEndpoint)
	str("FLOE_SQL_LISTEN", &c.SQLListen)
	str("FLOE_CONSOLE", &c.Console)
	str("FLOE_ADMIN_LISTEN", &c.AdminListen)
	str("FLOE_TRACING_OTLP_ENDPOINT", &c.TracingOTLPEndpoint)
	if v := getenv("FLOE_TRACING_SAMPLE_RATIO"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 || r > 1 {
			return fmt.Errorf("FLOE_TRACING_SAMPLE_RATIO %q: want a number in [0, 1]", v)
		}
		c.TracingSampleRatio = r
	}
	str("FLOE_SQL_TLS_CERT", &c.SQLTLSCert)
	str("FLOE_SQL_TLS_KEY", &c.SQLTLSKey)
	str("FLOE_SQL_MEMORY_LIMIT", &c.SQLMemoryLimit)
	if err := c.loadTLSEnv(getenv); err != nil {
		return err
	}
	str("FLOE_MEMORY_LIMIT", &c.MemoryLimit)
	if v := getenv("FLOE_GC_PERCENT"); v == "auto" {
		c.GCPercent = GCAuto
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("FLOE_GC_PERCENT: %w", err)
		}
		c.GCPercent = n
	}
	for name, dst := range map[string]*int64{"FLOE_SQL_CACHE_BYTES": &c.SQLCacheBytes, "FLOE_SQL_TABLE_CACHE_BYTES": &c.SQLTableCacheBytes,
		"FLOE_METADATA_CACHE_BYTES": &c.MetadataCacheBytes, "FLOE_GC_HEADROOM": &c.GCHeadroom,
		"FLOE_SCAN_PLANNING_CACHE_BYTES": &c.ScanPlanning.CacheBytes, "FLOE_SCAN_PLANNING_MANIFEST_CACHE_BYTES": &c.ScanPlanning.ManifestCacheBytes} {
		if v := getenv(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = n
		}
	}
	for name, dst := range map[string]*int{"FLOE_SCAN_PLANNING_ASYNC_THRESHOLD_FILES": &c.ScanPlanning.AsyncThresholdFiles,
		"FLOE_SCAN_PLANNING_ASYNC_WORKERS": &c.ScanPlanning.AsyncWorkers, "FLOE_SCAN_PLANNING_ASYNC_QUEUE": &c.ScanPlanning.AsyncQueue,
		"FLOE_SCAN_PLANNING_ASYNC_PER_PRINCIPAL": &c.ScanPlanning.AsyncPerPrincipal} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = n
		}
	}
	if v := getenv("FLOE_SCAN_PLANNING_DISABLED"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("FLOE_SCAN_PLANNING_DISABLED: %w", err)
		}
		c.ScanPlanning.Disabled = b
	}
	for name, dst := range map[string]*int{"FLOE_SCAN_PLANNING_PAGE_SIZE": &c.ScanPlanning.PageSize,
		"FLOE_SCAN_PLANNING_CACHE_ENTRIES": &c.ScanPlanning.CacheEntries, "FLOE_HTTP_MAX_CONNS": &c.HTTP.MaxConns,
		"FLOE_HTTP_MAX_PENDING_PER_IP": &c.HTTP.MaxPendingPerIP, "FLOE_HTTP_MAX_HEADER_BYTES": &c.HTTP.MaxHeaderBytes} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = n
		}
	}
	if v := getenv("FLOE_HTTP_BODY_MIN_RATE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("FLOE_HTTP_BODY_MIN_RATE: %w", err)
		}
		c.HTTP.BodyMinRate = n
	}
	if v := getenv("FLOE_SQL_THREADS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("FLOE_SQL_THREADS: %w", err)
		}
		c.SQLThreads = n
	}
	if v := getenv("FLOE_STREAM_FLUSH_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("FLOE_STREAM_FLUSH_INTERVAL: %w", err)
		}
		c.StreamFlushInterval = d
	}
	if v := getenv("FLOE_STREAM_FLUSH_ROWS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("FLOE_STREAM_FLUSH_ROWS: %w", err)
		}
		c.StreamFlushRows = n
	}
	if v := getenv("FLOE_AUDIT_CHECKPOINT_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("FLOE_AUDIT_CHECKPOINT_INTERVAL: %w", err)
		}
		c.AuditCheckpointInterval = d
	}
	if v := getenv("FLOE_AUDIT_PRUNE_BATCH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("FLOE_AUDIT_PRUNE_BATCH: %w", err)
		}
		c.AuditPruneBatch = n
	}
	for name, dst := range map[string]*int{"FLOE_SQL_CACHE_FILES": &c.SQLCacheFiles, "FLOE_SQL_MAX_TRANSACTION_STATEMENTS": &c.SQLMaxTransactionStatements,
		"FLOE_SQL_MAX_TEMP_TABLES": &c.SQLMaxTempTables, "FLOE_SQL_MAX_TEMP_ROWS": &c.SQLMaxTempRows, "FLOE_SQL_MAX_UNAUTHENTICATED": &c.SQLMaxUnauthenticated,
		"FLOE_SQL_MAX_UNAUTHENTICATED_PER_IP": &c.SQLMaxUnauthenticatedPerIP, "FLOE_SQL_MAX_CONNECTIONS": &c.SQLMaxConnections,
		"FLOE_SQL_LOGIN_FAILURES_PER_MINUTE": &c.SQLLoginFailuresPerMinute, "FLOE_CONSOLE_MAX_SESSIONS": &c.ConsoleMaxSessions} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = n
		}
	}
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
		"FLOE_MAINTENANCE_LEASE_TTL": &c.MaintenanceLeaseTTL, "FLOE_SNAPSHOT_RETENTION": &c.SnapshotRetention,
		"FLOE_CREDENTIAL_TTL": &c.CredentialTTL, "FLOE_SHARING_URL_TTL": &c.SharingURLTTL, "FLOE_AUDIT_EXPORT_INTERVAL": &c.AuditExportInterval,
		"FLOE_HTTP_HEADER_TIMEOUT": &c.HTTP.HeaderTimeout, "FLOE_HTTP_BODY_TIMEOUT": &c.HTTP.BodyTimeout,
		"FLOE_HTTP_IDLE_TIMEOUT": &c.HTTP.IdleTimeout,
		"FLOE_AUDIT_RETENTION":   &c.AuditRetention, "FLOE_AUDIT_PRUNE_INTERVAL": &c.AuditPruneInterval,
		"FLOE_PRODUCTS_CHECK_INTERVAL":   &c.ProductsCheckInterval,
		"FLOE_SCAN_PLANNING_TTL":         &c.ScanPlanning.TTL,
		"FLOE_SQL_MAX_STATEMENT_TIMEOUT": &c.SQLMaxStatementTimeout, "FLOE_SQL_STARTUP_TIMEOUT": &c.SQLStartupTimeout} {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = d
		}
	}
	for name, dst := range map[string]*bool{"FLOE_INSECURE_NO_AUTH": &c.InsecureNoAuth, "FLOE_DEMO": &c.Demo, "FLOE_MAINTENANCE": &c.Maintenance,
		"FLOE_ENCRYPTION": &c.Encryption, "FLOE_S3_PATH_STYLE": &c.S3.PathStyle} {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = b
		}
	}
	if v := getenv("FLOE_ALLOWED_LOCATIONS"); v != "" {
		c.AllowedLocations = strings.Split(v, ",")
	}
	if v := getenv("FLOE_MAINTENANCE_JOBS"); v != "" {
		c.MaintenanceJobs = strings.Split(v, ",")
	}
	c.Network.loadEnv(getenv)
	if err := c.Purge.loadEnv(getenv); err != nil {
		return err
	}
	if err := c.Sharing.loadEnv(getenv); err != nil {
		return err
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
	if err := c.finishStorage(); err != nil {
		return err
	}
	switch c.Console {
	case "", "on":
		c.Console = "on"
	case "off":
	default:
		return fmt.Errorf("console %q: want on or off", c.Console)
	}
	if c.ConsoleMaxSessions < 0 {
		return fmt.Errorf("console_max_sessions %d: must not be negative", c.ConsoleMaxSessions)
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := federation.Finish(c.FederatedCatalogs, getenv, c.Warehouse); err != nil {
		return err
	}
	allowed, err := catalog.NormalizeAllowedLocations(c.AllowedLocations)
	if err != nil {
		return fmt.Errorf("allowed_locations: %w", err)
	}
	c.AllowedLocations = allowed
	if err := c.finishKeyWrapper(); err != nil {
		return err
	}
	if c.CredentialTTL == 0 {
		// STS keys cannot be recalled: they live as short as STS allows.
		c.CredentialTTL = time.Hour
		if c.Storage == "s3" {
			c.CredentialTTL = 15 * time.Minute
		}
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
	case c.Purge.validate() != nil:
		return c.Purge.validate()
	case c.Sharing.validate() != nil:
		return c.Sharing.validate()
	case c.ScanPlanning.validate() != nil:
		return c.ScanPlanning.validate()
	case c.CredentialTTL < 15*time.Minute || c.CredentialTTL > 12*time.Hour:
		return fmt.Errorf("credential_ttl %s: must be between 15m and 12h", c.CredentialTTL)
	case c.SharingURLTTL < time.Minute || c.SharingURLTTL > time.Hour:
		return fmt.Errorf("sharing_url_ttl %s: must be between 1m and 1h", c.SharingURLTTL)
	case c.SnapshotRetention <= 0:
		return fmt.Errorf("snapshot_retention %s: must be positive", c.SnapshotRetention)
	case c.AuditRetention < 0:
		return fmt.Errorf("audit_retention %s: must be 0 (keep forever) or positive", c.AuditRetention)
	case c.AuditRetention > 0 && c.AuditPruneInterval < 100*time.Millisecond:
		return fmt.Errorf("audit_prune_interval %s: must be at least 100ms", c.AuditPruneInterval)
	case c.ProductsCheckInterval < 0 || c.ProductsCheckInterval > 0 && c.ProductsCheckInterval < 100*time.Millisecond:
		return fmt.Errorf("products_check_interval %s: must be 0 (off) or at least 100ms", c.ProductsCheckInterval)
	case c.AuditPruneBatch < 1 || c.AuditPruneBatch > audit.MaxPruneBatch:
		return fmt.Errorf("audit_prune_batch %d: must be between 1 and %d", c.AuditPruneBatch, audit.MaxPruneBatch)
	case c.AuditExportInterval != 0 && c.AuditExportInterval < 100*time.Millisecond:
		return fmt.Errorf("audit_export_interval %s: must be 0 (off) or at least 100ms", c.AuditExportInterval)
	case c.AuditCheckpointInterval != 0 && c.AuditCheckpointInterval < 100*time.Millisecond:
		return fmt.Errorf("audit_checkpoint_interval %s: must be 0 (off) or at least 100ms", c.AuditCheckpointInterval)
	case (c.SQLTLSCert == "") != (c.SQLTLSKey == ""):
		return fmt.Errorf("sql_tls_cert and sql_tls_key must be set together")
	case c.SQLThreads < 0:
		return fmt.Errorf("sql_threads %d: must not be negative", c.SQLThreads)
	case c.SQLCacheFiles < 1:
		return fmt.Errorf("sql_cache_files %d: must be at least 1", c.SQLCacheFiles)
	case c.SQLMaxTransactionStatements < 1:
		return fmt.Errorf("sql_max_transaction_statements %d: must be at least 1", c.SQLMaxTransactionStatements)
	case c.SQLMaxTempTables < 1 || c.SQLMaxTempRows < 1:
		return fmt.Errorf("sql_max_temp_tables and sql_max_temp_rows must be at least 1")
	case c.SQLMaxStatementTimeout < 10*time.Millisecond:
		return fmt.Errorf("sql_max_statement_timeout %s: must be at least 10ms", c.SQLMaxStatementTimeout)
	case c.SQLStartupTimeout < 100*time.Millisecond:
		return fmt.Errorf("sql_startup_timeout %s: must be at least 100ms", c.SQLStartupTimeout)
	case c.SQLMaxUnauthenticated < 1 || c.SQLMaxUnauthenticatedPerIP < 1 || c.SQLMaxConnections < 1:
		return fmt.Errorf("sql_max_unauthenticated, sql_max_unauthenticated_per_ip and sql_max_connections must be at least 1")
	case c.GCPercent < -1:
		return fmt.Errorf("gc_percent %d: must be 0 (auto), positive, or -1 (collect only at the memory limit)", c.GCPercent)
	case c.GCHeadroom < 0:
		return fmt.Errorf("gc_headroom %d: must not be negative", c.GCHeadroom)
	case c.MetadataCacheBytes < 1<<20:
		return fmt.Errorf("metadata_cache_bytes %d: must be at least 1 MiB", c.MetadataCacheBytes)
	}
	if c.MemoryLimit == "" {
		c.MemoryLimit = DefaultMemoryLimit
	}
	if _, _, err := parseMemoryLimit(c.MemoryLimit); err != nil {
		return err
	}
	if err := c.HTTP.validate(); err != nil {
		return err
	}
	if err := c.finishTLS(); err != nil {
		return err
	}
	if err := c.Network.validate(); err != nil {
		return err
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

// finishKeyWrapper derives and checks the key wrapper settings: whatever the
// storage, the store's secrets are wrapped, so the local wrapper always has
// a key file (or FLOE_ENCRYPTION_KEY).
func (c *Config) finishKeyWrapper() error {
	switch c.KeyWrapper {
	case "", "local":
		c.KeyWrapper = "local"
		if c.EncryptionKey == "" && c.EncryptionKeyFile == "" {
			c.EncryptionKeyFile = filepath.Join(c.DataDir, "keys", "warehouse.keys")
		}
	case "kms":
		if c.KMSKeyID == "" || len(c.KMSKeyID) > 255 {
			return fmt.Errorf("kms_key_id (FLOE_KMS_KEY_ID) is required with key_wrapper kms: the id, ARN or alias of a customer-managed KMS key (at most 255 bytes)")
		}
		if c.KMSRegion == "" {
			c.KMSRegion = c.Region
		}
	default:
		return fmt.Errorf("key_wrapper %q: must be local or kms", c.KeyWrapper)
	}
	return nil
}

// finishStorage derives and checks the storage settings.
func (c *Config) finishStorage() error {
	switch c.Storage {
	case "", "embedded":
		c.Storage = "embedded"
		if strings.HasPrefix(c.WarehouseLocation, "file://") && c.WarehouseDir == "" {
			c.WarehouseDir = strings.TrimPrefix(c.WarehouseLocation, "file://")
		} else if c.WarehouseLocation != "" && c.WarehouseLocation != "s3://"+c.Warehouse {
			return fmt.Errorf("warehouse_location %q: embedded storage keeps the warehouse at s3://%s (set warehouse_dir to move its files, or storage: s3 for external S3)", c.WarehouseLocation, c.Warehouse)
		}
		if c.WarehouseDir == "" {
			c.WarehouseDir = filepath.Join(c.DataDir, "warehouse")
		}
		abs, err := filepath.Abs(c.WarehouseDir)
		if err != nil {
			return fmt.Errorf("warehouse_dir: %w", err)
		}
		c.WarehouseDir = abs
		if c.ColdDir == "" {
			c.ColdDir = filepath.Join(c.DataDir, "cold")
			if rel, err := filepath.Rel(c.WarehouseDir, c.ColdDir); err == nil && !strings.HasPrefix(rel, "..") {
				c.ColdDir = filepath.Join(c.WarehouseDir, ".floe-cold") // the warehouse is the data dir
			}
		}
		if c.ColdDir != "off" {
			if c.ColdDir, err = filepath.Abs(c.ColdDir); err != nil {
				return fmt.Errorf("cold_dir: %w", err)
			}
		}
		c.WarehouseLocation = "s3://" + c.Warehouse
		if len(c.Warehouse) < 3 || len(c.Warehouse) > 63 || strings.ToLower(c.Warehouse) != c.Warehouse || strings.ContainsAny(c.Warehouse, "_.") {
			return fmt.Errorf("warehouse %q: on embedded storage the warehouse is the bucket name: 3-63 lower-case letters, digits and '-'", c.Warehouse)
		}
		if c.Encryption && c.EncryptionKey == "" && c.EncryptionKeyFile == "" {
			c.EncryptionKeyFile = filepath.Join(c.DataDir, "keys", "warehouse.keys")
		}
	case "s3":
		u, err := url.Parse(c.WarehouseLocation)
		if err != nil || (u.Scheme != "s3") || u.Host == "" {
			return fmt.Errorf("warehouse_location %q: storage s3 needs an s3://bucket[/prefix] location", c.WarehouseLocation)
		}
		if c.S3.RoleARN == "" {
			return fmt.Errorf("s3.role_arn (FLOE_S3_ROLE_ARN) is required with storage s3: Floe vends credentials by assuming it")
		}
	default:
		return fmt.Errorf("storage %q: must be embedded or s3", c.Storage)
	}
	if c.S3PublicURL != "" {
		u, err := url.Parse(c.S3PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("s3_public_url %q: must be an http or https URL without a path", c.S3PublicURL)
		}
		c.S3PublicURL = strings.TrimSuffix(c.S3PublicURL, "/")
	}
	return nil
}

// netlimit converts the limits for package netlimit.
func (h HTTPLimits) netlimit() netlimit.Limits {
	return netlimit.Limits{MaxConns: h.MaxConns, MaxPendingPerIP: h.MaxPendingPerIP, HeaderTimeout: h.HeaderTimeout,
		BodyTimeout: h.BodyTimeout, BodyMinRate: h.BodyMinRate, IdleTimeout: h.IdleTimeout, MaxHeaderBytes: h.MaxHeaderBytes}
}

// validate checks the HTTP limits.
func (h HTTPLimits) validate() error {
	switch {
	case h.MaxConns < 16:
		return fmt.Errorf("http.max_conns %d: must be at least 16", h.MaxConns)
	case h.MaxPendingPerIP < 1 || h.MaxPendingPerIP > h.MaxConns:
		return fmt.Errorf("http.max_pending_per_ip %d: must be between 1 and http.max_conns", h.MaxPendingPerIP)
	case h.HeaderTimeout < 100*time.Millisecond:
		return fmt.Errorf("http.header_timeout %s: must be at least 100ms", h.HeaderTimeout)
	case h.BodyTimeout < 100*time.Millisecond:
		return fmt.Errorf("http.body_timeout %s: must be at least 100ms", h.BodyTimeout)
	case h.BodyMinRate < 1:
		return fmt.Errorf("http.body_min_rate %d: must be positive", h.BodyMinRate)
	case h.IdleTimeout < time.Second:
		return fmt.Errorf("http.idle_timeout %s: must be at least 1s", h.IdleTimeout)
	case h.MaxHeaderBytes < 4<<10:
		return fmt.Errorf("http.max_header_bytes %d: must be at least 4096", h.MaxHeaderBytes)
	}
	return nil
}
