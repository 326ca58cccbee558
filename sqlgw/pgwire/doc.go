// Package pgwire serves the PostgreSQL frontend/backend protocol (version
// 3.0 and 3.2) for Floe's SQL endpoint. It owns the wire: startup and TLS
// negotiation, authentication, the simple and extended query protocols,
// cancel requests, value encoding and error reporting. It knows nothing of
// SQL semantics: every statement goes to an Engine, which prepares it and
// produces rows, and every login goes to an Authenticator.
//
// # Connections
//
// A connection may start with SSLRequest (answered 'S' and a TLS handshake
// when Options.TLSConfig is set, 'N' otherwise), GSSENCRequest (always 'N')
// or CancelRequest. With Options.RequireTLS a plaintext StartupMessage is
// refused with a FATAL 28000 error. The server then reports the parameters
// clients expect (server_version, server_encoding and client_encoding UTF8,
// DateStyle "ISO, MDY", TimeZone, integer_datetimes and
// standard_conforming_strings on, ...), BackendKeyData and ReadyForQuery.
//
// # Authentication
//
// For a user that has a SCRAM-SHA-256 verifier (Authenticator.SCRAMVerifier)
// the server runs a SASL exchange, offering SCRAM-SHA-256-PLUS with
// tls-server-end-point channel binding over TLS. For any other user it asks
// for a cleartext password, which must be a Floe OAuth access token, and only
// over TLS or a loopback/Unix connection; the token's principal must equal
// the user name of the startup message. Failures end the connection with a
// FATAL 28P01 error; passwords and tokens are never logged.
//
// # Statements
//
// A simple Query may hold several statements, split by SplitStatements and
// run one after another until the first error. The extended protocol
// (Parse, Bind, Describe, Execute with row limits and PortalSuspended, Close,
// Flush, Sync) keeps named and unnamed statements and portals; after an
// error the server skips messages until Sync. Parameters and results use
// the text or binary format as the client asks; see Encoding for the Go
// types the Engine exchanges for each type OID.
//
// Errors an Engine returns as *Error keep their SQLSTATE; *floe.Error kinds
// map to a fitting SQLSTATE with their public message; anything else is
// logged with the connection id and reported as XX000 "internal error".
// # Encoding
//
// Result values (Result.Next), by column type; nil is NULL for every type:
//
//	bool                      bool
//	int2, int4, int8, oid     any Go integer type (range-checked)
//	float4, float8            float32, float64 or an integer
//	numeric                   string ("12.50", "NaN"), an integer or float64
//	text, varchar, bpchar,
//	name, char, unknown       string or []byte
//	bytea                     []byte or string
//	date                      time.Time (its calendar date)
//	timestamp                 time.Time (its wall clock; the location is ignored)
//	timestamptz               time.Time (an instant; text shows it in the session's TimeZone)
//	json, jsonb               string, []byte or json.RawMessage
//	uuid                      [16]byte, uuid.UUID or string
//
// For other type OIDs a string or []byte is sent as is in text format, and
// other values are encoded with pgx's pgtype for the OID (either format);
// binary results are refused at Bind for OIDs pgtype does not know.
//
// Parameter values (Statement.Execute args), by parameter type: bool,
// int16, int32, int64, uint32 (oid), float32, float64; numeric, text-like,
// json and jsonb as string; bytea as []byte; date, timestamp and
// timestamptz as time.Time in UTC (dates at midnight); uuid as its
// canonical string. A parameter of type 0 (unspecified) or of another OID
// arrives as string in text format; in binary format pgtype decodes known
// OIDs (arrays become slices, ...) and others are refused. NULL is nil.
package pgwire
