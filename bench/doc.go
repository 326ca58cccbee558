// Package bench holds Floe's benchmark harnesses. They are ordinary Go
// benchmarks (go test -bench) that start a real Floe on loopback and report
// throughput and latency percentiles as custom metrics; see run.sh and
// docs/benchmarks.md. They are not run as timed tests in CI.
package bench
