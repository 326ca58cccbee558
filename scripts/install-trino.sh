#!/usr/bin/env bash
# Install what the Trino interop suite (tests/interop/trino) needs, idempotently:
#
#   - the Trino server tarball (io.trino:trino-server:$TRINO_VERSION, ~820 MB)
#     from Maven Central, downloaded once into a cache directory, verified
#     against the .sha1 published next to it, and unpacked there;
#   - a JDK that Trino accepts (Java 24+): Temurin 25 at
#     /usr/lib/jvm/temurin-25-jdk-amd64 when present, else any JDK >= 24 found
#     in /usr/lib/jvm or via $TRINO_JAVA_HOME, else (as root on Debian) the
#     openjdk-25-jdk-headless package when apt offers one; otherwise it fails
#     with a clear message.
#
# The suite talks to Trino over its HTTP client protocol with the Python
# standard library, so no Trino client is installed.
#
# Usage: scripts/install-trino.sh            prints TRINO_HOME=... and TRINO_JAVA_HOME=...
#
# Environment:
#   TRINO_VERSION     default 476
#   FLOE_TRINO_CACHE  cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/floe-ci/trino)
#   TRINO_JAVA_HOME   a JDK 24+ to use instead of searching
#
# Network: Maven Central only (and apt when a JDK must be installed).
set -euo pipefail

version="${TRINO_VERSION:-476}"
cache="${FLOE_TRINO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/floe-ci/trino}"
base="https://repo1.maven.org/maven2/io/trino/trino-server/$version"
tarball="trino-server-$version.tar.gz"
home="$cache/trino-server-$version"

say() { echo "install-trino: $*" >&2; }
die() { say "error: $*"; exit 1; }

command -v curl >/dev/null 2>&1 || die "curl is needed"
mkdir -p "$cache"

# --- JDK 24+ ---------------------------------------------------------------
java_major() { # JAVA_HOME -> major version, or empty
	local v
	v="$("$1/bin/java" -version 2>&1 | head -n1)" || return 0
	sed -nE 's/.*version "(1\.)?([0-9]+).*/\2/p' <<<"$v"
}
jdk=""
for cand in "${TRINO_JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*; do
	[[ -n "$cand" && -x "$cand/bin/java" ]] || continue
	m="$(java_major "$cand")"
	if [[ "$m" =~ ^[0-9]+$ ]] && ((m >= 24)); then
		jdk="$cand"
		break
	fi
done
if [[ -z "$jdk" ]]; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1 &&
		apt-cache show openjdk-25-jdk-headless >/dev/null 2>&1; then
		say "installing openjdk-25-jdk-headless with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-25-jdk-headless >/dev/null
		for cand in /usr/lib/jvm/*25*; do
			[[ -x "$cand/bin/java" ]] && jdk="$cand" && break
		done
	fi
fi
[[ -n "$jdk" ]] || die "Trino $version needs Java 24 or newer: install Temurin 25 into /usr/lib/jvm/temurin-25-jdk-amd64 (https://adoptium.net) or set TRINO_JAVA_HOME to a JDK 24+"

# --- Trino server ----------------------------------------------------------
if [[ ! -x "$home/bin/launcher" || ! -f "$home/.floe-verified" ]]; then
	want="$(curl -fsSL --retry 3 "$base/$tarball.sha1" | tr -d ' \n' | cut -c1-40)"
	[[ "$want" =~ ^[0-9a-f]{40}$ ]] || die "no valid .sha1 at $base/$tarball.sha1"
	if [[ ! -f "$cache/$tarball" ]] || [[ "$(sha1sum "$cache/$tarball" | cut -d' ' -f1)" != "$want" ]]; then
		say "downloading $base/$tarball (about 820 MB, once, into $cache)"
		# -C -: a previous interrupted download is resumed.
		curl -fSL --retry 5 --retry-delay 5 -C - -o "$cache/$tarball.part" "$base/$tarball" ||
			curl -fSL --retry 5 --retry-delay 5 -o "$cache/$tarball.part" "$base/$tarball"
		got="$(sha1sum "$cache/$tarball.part" | cut -d' ' -f1)"
		if [[ "$got" != "$want" ]]; then
			rm -f "$cache/$tarball.part"
			die "$tarball: sha1 $got, Maven Central says $want"
		fi
		mv -f "$cache/$tarball.part" "$cache/$tarball"
	fi
	say "unpacking $tarball"
	rm -rf "$home" "$home.tmp"
	mkdir -p "$home.tmp"
	tar -xzf "$cache/$tarball" -C "$home.tmp" --strip-components=1
	echo "$want" >"$home.tmp/.floe-verified"
	mv "$home.tmp" "$home"
fi

echo "TRINO_HOME=$home"
echo "TRINO_JAVA_HOME=$jdk"
