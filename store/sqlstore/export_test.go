package sqlstore

// Test helpers for the external test package.
var (
	TestPGDSN     = testPGDSN
	FreshPostgres = freshPostgres
	OpenForTest   = openForTest
)
