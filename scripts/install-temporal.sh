#!/usr/bin/env bash
# Puts a Temporal CLI of the pinned version on disk and prints its path.
# Order: $TEMPORAL_CLI if it fits, `temporal` on PATH if it fits, the cached build, else `go install`.
# The cache lives outside the checkout so a fresh clone (CI) reuses the build of an earlier one.
set -euo pipefail

TEMPORAL_CLI_VERSION="${TEMPORAL_CLI_VERSION:-1.5.1}"
TOOLS_BIN="${LOCKWARDEN_TOOLS_BIN:-$HOME/.cache/lockwarden/bin}"

# A release binary reports its version; a `go install` build reports 0.0.0-DEV, so read its module
# version from the build info instead.
version_of() {
  local v
  v=$("$1" --version 2>/dev/null | sed -n 's/^temporal version \([0-9][0-9.]*\) .*/\1/p')
  if [ -z "$v" ] && command -v go >/dev/null; then
    v=$(go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/temporalio/cli" { sub(/^v/, "", $3); print $3 }')
  fi
  echo "$v"
}
fits() { [ -n "$1" ] && [ -x "$1" ] && [ "$(version_of "$1")" = "$TEMPORAL_CLI_VERSION" ]; }

for candidate in "${TEMPORAL_CLI:-}" "$(command -v temporal || true)" "$TOOLS_BIN/temporal"; do
  if fits "$candidate"; then echo "$candidate"; exit 0; fi
done

command -v go >/dev/null || { echo "install-temporal: Go is needed to build the Temporal CLI" >&2; exit 1; }
mkdir -p "$TOOLS_BIN"
echo "install-temporal: building temporal v$TEMPORAL_CLI_VERSION with go install (takes minutes once)" >&2
# Newer tags carry a replace directive that `go install` refuses, hence the pin.
GOBIN="$TOOLS_BIN" GOFLAGS=-mod=mod go install "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_CLI_VERSION" >&2
fits "$TOOLS_BIN/temporal" || { echo "install-temporal: built binary does not report v$TEMPORAL_CLI_VERSION" >&2; exit 1; }
echo "$TOOLS_BIN/temporal"
