#!/usr/bin/env bash
# Install what the Spark interop suite (tests/interop/spark) needs, idempotently:
#
#   - a virtualenv with the pinned pyspark and pytest
#     (tests/interop/spark/requirements.txt; reinstalled only when it changes),
#   - the pinned Iceberg Spark runtime and Iceberg AWS bundle jars and the
#     PostgreSQL JDBC driver (tests/interop/spark/versions.env), fetched from
#     Maven Central with mvn into a cache directory.
#
# Usage: scripts/install-spark.sh [VENV_DIR]        (default: .venv-spark)
#
# Environment:
#   PYTHON          interpreter for a new venv (default python3)
#   MVN             Maven command (default mvn)
#   FLOE_JARS_DIR   jar cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/floe/jars);
#                   the test suite reads the same variable and default.
#
# Needs Java (11-21; 17 is what CI has), Maven and Python 3.11+ with venv. When
# java or mvn is missing and this runs as root on Debian, they are installed
# with apt-get (openjdk-17-jdk-headless, maven). Network: PyPI and Maven Central only.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="$repo/tests/interop/spark"
req="$suite/requirements.txt"
PYTHON="${PYTHON:-python3}"
MVN="${MVN:-mvn}"
venv="${1:-.venv-spark}"
mkdir -p "$(dirname "$venv")"
venv="$(cd "$(dirname "$venv")" && pwd)/$(basename "$venv")"
jars="${FLOE_JARS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/floe/jars}"

say() { echo "install-spark: $*" >&2; }
die() { say "error: $*"; exit 1; }

# --- Java and Maven ------------------------------------------------------
need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v "$MVN" >/dev/null 2>&1 || need+=(maven)
if ((${#need[@]})); then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		say "installing ${need[*]} with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	else
		die "missing ${need[*]}: install a JDK 17 and Maven (or set MVN)"
	fi
fi
java_version="$(java -version 2>&1 | head -n1)"
java_major="$(sed -E 's/.*version "(1\.)?([0-9]+).*/\2/' <<<"$java_version")"
if [[ "$java_major" =~ ^[0-9]+$ ]] && { ((java_major < 11)) || ((java_major > 21)); }; then
	die "Spark 3.5 needs Java 11-21 (17 recommended), found: $java_version (set JAVA_HOME / PATH)"
fi

# --- virtualenv with pyspark and pytest ----------------------------------
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
	say "creating $venv with $PYTHON"
	rm -rf "$venv"
	"$PYTHON" -m venv "$venv"
fi
stamp="$venv/.floe-spark-requirements"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]] || ! "$venv/bin/python" -c 'import pyspark, pytest' >/dev/null 2>&1; then
	say "installing $(basename "$req") into $venv"
	"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
	echo "$want" >"$stamp"
fi
pyspark_version="$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')"

# --- Iceberg jars from Maven Central ---------------------------------------
# The Spark runtime, and the AWS bundle (S3FileIO with the AWS SDK) that Spark
# reads and writes table files with, through the S3 endpoint and credentials
# Floe vends.
# shellcheck source=../tests/interop/spark/versions.env
source "$suite/versions.env"
tmp=""
trap '[[ -z "$tmp" ]] || rm -rf "$tmp"' EXIT
fetch_jar() { # ARTIFACT [GROUP VERSION]: GROUP:ARTIFACT:VERSION (default org.apache.iceberg, $ICEBERG_VERSION) into $jars
	local artifact="$1" group="${2:-org.apache.iceberg}" version="${3:-$ICEBERG_VERSION}"
	local jar="$jars/$artifact-$version.jar"
	[[ -s "$jar" ]] && return 0
	say "fetching $group:$artifact:$version with $MVN"
	mkdir -p "$jars"
	tmp="$(mktemp -d "$jars/.fetch.XXXXXX")"
	# -C: fail on a checksum mismatch. The plugin version is pinned so the
	# goal behaves the same whatever Maven's default binding is.
	if ! (cd "$tmp" && "$MVN" -B -q -C -Dstyle.color=never \
		org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
		"-Dartifact=$group:$artifact:$version:jar" \
		"-DoutputDirectory=$tmp/out") >"$tmp/mvn.log" 2>&1; then
		cat "$tmp/mvn.log" >&2
		die "mvn could not fetch $group:$artifact:$version"
	fi
	[[ -s "$tmp/out/$(basename "$jar")" ]] || die "mvn did not produce $(basename "$jar")"
	mv -f "$tmp/out/$(basename "$jar")" "$jar"
	rm -rf "$tmp"
	tmp=""
}
runtime="iceberg-spark-runtime-${SPARK_MINOR}_${SCALA}"
fetch_jar "$runtime"
fetch_jar iceberg-aws-bundle
# The PostgreSQL JDBC driver, for the SQL endpoint's JDBC test (test_jdbc.py).
fetch_jar postgresql org.postgresql "$PGJDBC_VERSION"
jar="$jars/$runtime-$ICEBERG_VERSION.jar"
aws_jar="$jars/iceberg-aws-bundle-$ICEBERG_VERSION.jar"

cat <<EOF
Spark interop environment ready:
  venv:         $venv (pyspark $pyspark_version)
  iceberg jars: $jar
                $aws_jar
  jdbc driver:  $jars/postgresql-$PGJDBC_VERSION.jar
  java:         $java_version
Run the suite with:
  FLOE_BIN=bin/floe FLOE_JARS_DIR=$jars $venv/bin/python -m pytest -q -p no:cacheprovider tests/interop/spark
EOF
