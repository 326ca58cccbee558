#!/usr/bin/env bash
# Runs Floe's catalog benchmarks in one go and prints Go's benchmark lines.
# Usage: bench/run.sh [extra go test flags]
# PostgreSQL figures need FLOE_TEST_PG_DSN (see store/sqlstore/testdata/start-postgres.sh);
# without it those benchmarks are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -c -o /tmp/floe-bench.test ./bench/
run() { /tmp/floe-bench.test -test.run '^$' -test.benchtime "$2" -test.bench "$1" "${@:3}" | grep -E '^Benchmark' || true; }
echo "# SQLite"
run '^BenchmarkLoadTable$' 50000x
run '^BenchmarkCommitDistinctTables$' 5000x
run '^BenchmarkListTablesPage$' 2000x
if [[ -n "${FLOE_TEST_PG_DSN:-}" ]]; then
	echo "# PostgreSQL"
	FLOE_BENCH_STORE=postgres run '^BenchmarkLoadTable$' 50000x
	FLOE_BENCH_STORE=postgres run '^BenchmarkCommitDistinctTables$' 5000x
	run '^BenchmarkLoadTableTwoNodes$' 50000x
fi
