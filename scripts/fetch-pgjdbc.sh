#!/usr/bin/env bash
# Fetch pgJDBC (org.postgresql:postgresql:$PGJDBC_VERSION), the PostgreSQL
# JDBC driver test_pg_tools.py runs DatabaseMetaData with, idempotently:
# from Maven Central into a cache directory once, verified against a pinned
# SHA-256. Prints the jar's path.
#
# Environment:
#   FLOE_PGJDBC_CACHE  cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/floe-ci/pgjdbc)
#
# Network: Maven Central only, and only when the jar is not cached.
set -euo pipefail

version=42.7.14
sha256=73914527305a40cce504b0d3d90b23caf565136912d607ae8ae7c5895512332c
cache="${FLOE_PGJDBC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/floe-ci/pgjdbc}"
jar="$cache/postgresql-$version.jar"

check() { echo "$sha256  $1" | sha256sum --check --status; }

if [[ -f "$jar" ]] && check "$jar"; then
	echo "$jar"
	exit 0
fi
mkdir -p "$cache"
tmp="$(mktemp "$cache/.postgresql-$version.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
m2="$HOME/.m2/repository/org/postgresql/postgresql/$version/postgresql-$version.jar"
if [[ -f "$m2" ]]; then
	cp "$m2" "$tmp"
else
	curl -fsSL --retry 3 -o "$tmp" "https://repo1.maven.org/maven2/org/postgresql/postgresql/$version/postgresql-$version.jar"
fi
if ! check "$tmp"; then
	echo "fetch-pgjdbc: postgresql-$version.jar does not match its pinned SHA-256" >&2
	exit 1
fi
mv "$tmp" "$jar"
echo "$jar"
