#!/usr/bin/env bash
# Puts Jaeger v2 (the trace store the tracing test and compose use) on disk and prints its path:
# built with Go from the module proxy, once, into a cache outside the checkout (a fresh clone reuses
# it). Jaeger's go.mod carries replace directives, so `go install pkg@version` refuses it; it is
# built as a tool of a small module of its own instead. The UI is not embedded in such a build: the
# query API, which the tests read, is whole.
set -euo pipefail

JAEGER_VERSION="${JAEGER_VERSION:-1.75.0}"
TOOLS_BIN="${LOCKWARDEN_TOOLS_BIN:-$HOME/.cache/lockwarden/bin}"
bin="$TOOLS_BIN/jaeger-v$JAEGER_VERSION/jaeger"
[ -x "$bin" ] && { echo "$bin"; exit 0; }

command -v go >/dev/null || { echo "install-jaeger: Go is needed to build Jaeger" >&2; exit 1; }
build="${LOCKWARDEN_BUILD_CACHE:-$HOME/.cache/lockwarden/build}/jaeger-v$JAEGER_VERSION"
mkdir -p "$build" "$(dirname "$bin")"
echo "install-jaeger: building Jaeger v$JAEGER_VERSION with go (takes minutes once)" >&2
cd "$build"
[ -f go.mod ] || go mod init lockwarden-jaeger-build >&2
go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@v$JAEGER_VERSION" >&2
GOBIN="$(dirname "$bin")" go install tool >&2
echo "$bin"
