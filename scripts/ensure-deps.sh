#!/usr/bin/env bash
# Installs the npm packages when node_modules is missing or older than package-lock.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stamp=node_modules/.lockwarden-lock-hash
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
  echo "$want" >"$stamp"
fi
