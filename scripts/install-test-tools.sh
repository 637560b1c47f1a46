#!/usr/bin/env bash
# Installs (Debian packages) the tools the tests drive besides the servers: Chromium, for the
# Temporal UI tests (through playwright-core, which never downloads a browser of its own);
# docker-compose, to validate docker-compose.yml without a Docker engine; ip and iptables, for
# the model worker's network namespace (test/modelWorkerIsolation.test.ts); and Prometheus with
# promtool, for the alert rules and the dashboard (test/alertRules.test.ts, test/dashboard.test.ts).
# Then Jaeger, the trace store of test/tracing.test.ts (scripts/install-jaeger.sh). Idempotent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-jaeger.sh >/dev/null

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v ip >/dev/null || missing+=(iproute2)
command -v iptables >/dev/null || missing+=(iptables)
command -v promtool >/dev/null && command -v prometheus >/dev/null || missing+=(prometheus)
[ ${#missing[@]} -eq 0 ] && exit 0

log="${XDG_STATE_HOME:-$HOME/.local/state}/lockwarden/apt-test-tools.log"
mkdir -p "$(dirname "$log")"
echo "installing ${missing[*]} (apt-get; output in $log)" >&2
export DEBIAN_FRONTEND=noninteractive
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq "${missing[@]}"; } >"$log" 2>&1; then
  tail -20 "$log" >&2
  exit 1
fi
