//go:build race

package sqlstore

// raceEnabled reports whether the tests run under the race detector, which
// slows modernc.org/sqlite (SQLite compiled to Go) about fortyfold.
const raceEnabled = true
