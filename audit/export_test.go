package audit

// HashRecord exposes the chain hash to the tests, which play an attacker
// who recomputes it after rewriting a record.
var HashRecord = hashRecord
