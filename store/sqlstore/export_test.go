package sqlstore

// Test helpers for the external test package.
var (
	OpenForTest = openForTest
)
