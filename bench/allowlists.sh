#!/usr/bin/env bash
# allowlists.sh compares the build before the network allowlists with this
# one in alternating rounds (the machine is shared: report medians):
#
#   go test -c -o /tmp/before.test ./bench   # in a worktree of the build before
#   go test -c -o /tmp/after.test ./bench    # here
#   bench/allowlists.sh /tmp/before.test /tmp/after.test [rounds]
#
# "before" and "after" run BenchmarkLoadTable and BenchmarkS3GetSmall (no
# allowlist configured: the guard runs with empty lists); "after" also runs
# the Allowlisted variants (256-entry listener lists, a principal list,
# X-Forwarded-For through a trusted proxy). Prints ops/s per run.
set -euo pipefail
before=$1 after=$2 rounds=${3:-3}
cd "$(dirname "$0")"
for r in $(seq "$rounds"); do
	for side in before after; do
		bin=$before
		pat='^(BenchmarkLoadTable|BenchmarkS3GetSmall)$'
		if [[ $side == after ]]; then
			bin=$after
			pat='^(BenchmarkLoadTable|BenchmarkS3GetSmall|BenchmarkLoadTableAllowlisted|BenchmarkS3GetSmallAllowlisted)$'
		fi
		"$bin" -test.run XXX -test.bench "$pat" -test.benchtime 4000x 2>/dev/null |
			awk -v r="$r" -v s="$side" '/^Benchmark/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ops/s") print "round", r, s, $1, $i, "ops/s" }'
	done
done
