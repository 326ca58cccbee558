#!/usr/bin/env bash
# Runs the embedded S3 endpoint benchmarks (issue 3) in one go and prints Go's
# benchmark lines plus the per-round logs. Each benchmark starts `floe serve`
# as a separate process; the GET/PUT objects are 1 GiB unless
# FLOE_BENCH_S3_SIZE says otherwise (e.g. 64MiB for a quick check), the 32
# multipart uploads 100 MiB each unless FLOE_BENCH_S3_MP_SIZE says otherwise.
# Needs about 12 GiB free in $TMPDIR (default /tmp).
# Usage: bench/s3.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/floe-bench-bin ./cmd/floe
go test -c -o /tmp/floe-bench-s3.test ./bench/
echo "# $(date -u +%FT%TZ) load: $(cat /proc/loadavg)"
# Which code was measured: the commit, and a hash of every Go file in the tree
# (committed or not), so a figure can be tied to a working tree.
echo "# tree: $(git rev-parse --short HEAD), Go sources sha256 $(git ls-files -co --exclude-standard -- '*.go' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)"
cd bench
FLOE_BENCH_S3=1 FLOE_BENCH_S3_BIN=/tmp/floe-bench-bin /tmp/floe-bench-s3.test \
	-test.run '^$' -test.bench '^BenchmarkS3' -test.benchtime 3x -test.timeout 2h -test.v "$@" |
	grep -E '^(Benchmark|\s+s3_test.go|ok|FAIL|---)' || true
echo "# $(date -u +%FT%TZ) load: $(cat /proc/loadavg)"
