package check

// Hints is the troubleshooting table: the one-sentence fix of each check's
// warning or failure, keyed by finding id.
var Hints = map[string]string{
	"s3.client-credentials":  "Register the client with the catalog's OAuth2 server and pass its id:secret with --credential (or point --token-url at the right token endpoint).",
	"s3.token-lifetime":      "Issue access tokens with an expires_in of one hour or less (Floe: --token-ttl 15m) so clients refresh them.",
	"s3.token-exchange":      "Enable RFC 8693 token exchange for access tokens so Iceberg clients can refresh without re-sending the secret.",
	"s2.config":              "Serve GET /v1/config with defaults, overrides (prefix) and the endpoints list, and pass the right --warehouse.",
	"s2.namespaces":          "Grant the identity DESCRIBE (list) on the warehouse or catalog, and make sure the warehouse holds namespaces.",
	"s2.load-table":          "Grant the identity DESCRIBE (or SELECT) on the tables and fix the table metadata the catalog cannot load.",
	"s2.federation-uri":      "Configure the catalog so GET /v1/config answers a prefix, and give federating engines that warehouse identifier.",
	"s1.current-metadata":    "Upgrade tables to format-version 2 (or 3) and commit through the catalog so every table has a current metadata-location.",
	"s1.metadata-readable":   "Vend credentials whose scope covers the table's metadata directory (and an endpoint engines can reach).",
	"s4.vended-credentials":  "Turn on credential vending so loadTable answers storage credentials without X-Iceberg-Access-Delegation (Floe: keep s3_listen on, or storage s3 with an STS role).",
	"s4.credential-lifetime": "Vend temporary STS-style credentials (with a session token) lasting 12 hours or less, never long-lived keys.",
	"s4.scoped":              "Scope vended credentials to the table's own location prefix (a session policy per table).",
	"s4.read-only":           "Vend read-only credentials to identities that hold only SELECT (no write actions in the session policy).",
	"s5.views":               "Publish views (or data products) over the raw tables for consumers instead of exposing only raw tables.",
	"s6.partitioning":        "Partition large tables on the columns queries filter by (e.g. a day or month transform of the event time).",
	"s6.small-files":         "Compact the table (Floe: floe maintain TABLE --compact, or keep maintenance on) and batch writes into larger files.",
	"s6.snapshots":           "Expire old snapshots (Floe: floe.maintenance.snapshot.* properties or floe maintain TABLE --expire).",
	"s6.compaction":          "Turn compaction on (floe.maintenance.compaction.enabled=true and serve with --maintenance).",
	"s6.encryption":          "Turn encryption at rest on (Floe: encryption: true, the default) and rewrite existing objects.",
	"s6.lifecycle":           "Set floe.lifecycle.cold-after (e.g. 30d) on the table or its namespace to tier old files to cold storage.",
	"s7.describe":            "Grant the federation identity DESCRIBE on the warehouse or namespaces as well as on the tables, not SELECT on tables alone.",
}
