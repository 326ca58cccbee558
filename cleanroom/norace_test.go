//go:build !race

package cleanroom_test

// raceEnabled: the race detector slows the SQL endpoint several times.
const raceEnabled = false
