#!/usr/bin/env bash
# Builds, once per source, the Curator program the Curator test contends with (devkit/curator: Apache
# Curator's InterProcessMutex, curator-recipes from Maven Central), and runs it.
#   scripts/curator-contender.sh build          prints the build's directory
#   scripts/curator-contender.sh run ARGS...    runs CuratorContender ARGS (see its header)
# The build is cached under ~/.cache/lockwarden/curator by a hash of its sources; Maven's own cache
# (~/.m2) keeps the jars, so only a clean machine's first build reaches Maven Central.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/devkit/curator"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/lockwarden/curator"
hash="$(cat "$src/pom.xml" "$src/CuratorContender.java" | sha256sum | cut -c1-16)"
out="$cache/$hash"

build() {
  [ -f "$out/classpath" ] && return 0
  if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
    echo "installing maven and a JDK (apt-get)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven default-jdk-headless; } >&2
  fi
  local tmp="$out.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp/classes"
  mvn -q -B -f "$src/pom.xml" dependency:build-classpath -Dmdep.outputFile="$tmp/classpath" >&2
  javac -cp "$(cat "$tmp/classpath")" -d "$tmp/classes" "$src/CuratorContender.java"
  mv "$tmp" "$out" 2>/dev/null || rm -rf "$tmp" # another build won the race: its result is the same
}

case "${1:-}" in
  build) build; echo "$out" ;;
  run) shift; build; exec java -Xmx128m -cp "$out/classes:$(cat "$out/classpath")" CuratorContender "$@" ;;
  *) echo "usage: $0 build | run ARGS..." >&2; exit 2 ;;
esac
