#!/usr/bin/env bash
# Starts, stops or reports the local Temporal dev server (loopback, UI on 8233, history in a file).
# Idempotent: `start` reuses a healthy server already listening on the address.
#   scripts/temporal-server.sh start|stop|status|settings
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
data_dir="${LOCKWARDEN_DATA_DIR:-$root/.data}"
port="${TEMPORAL_PORT:-7233}"
ui_port="${TEMPORAL_UI_PORT:-8233}"
address="127.0.0.1:$port"
pid_file="$data_dir/temporal.pid"
log_file="$data_dir/temporal.log"

temporal_bin() { bash "$here/install-temporal.sh"; }
healthy() { "$1" operator cluster health --address "$address" >/dev/null 2>&1; }
search_attributes() { grep -v '^#' "$here/search-attributes.txt" | grep -v '^$'; }

# The dev server's defaults are a cluster's: each history queue processor polls its tasks at most
# 20 times a second (a workflow or activity task waits up to 50 ms to be dispatched, about 40 ms a hop),
# and timers fire at least timerProcessorMaxTimeShift (1 s, an allowance for clock shift between
# hosts) late. A single host needs neither; lock hand-offs are hops and back-offs are sub-second.
# The compose file's dynamic config sets the same; tests that start a dev server of their own read
# this list (dispatch_settings), so every server runs alike.
dispatch_settings() { grep -v '^#' "$here/dev-server-settings.txt" | grep -v '^$'; }

register_search_attributes() {
  local bin="$1" existing name type
  existing=$("$bin" operator search-attribute list --address "$address" 2>/dev/null || true)
  for entry in $(search_attributes); do
    name="${entry%%=*}"; type="${entry#*=}"
    grep -qw "$name" <<<"$existing" && continue
    "$bin" operator search-attribute create --address "$address" --name "$name" --type "$type" >/dev/null
  done
}

start() {
  local bin; bin="$(temporal_bin)"
  mkdir -p "$data_dir"
  if healthy "$bin"; then
    register_search_attributes "$bin"
    echo "temporal dev server already up on $address (UI http://localhost:$ui_port)"
    return 0
  fi
  local sa_flags=()
  for entry in $(search_attributes); do sa_flags+=(--search-attribute "$entry"); done
  # The history survives a server restart (WAL), without an fsync per write: about 10 ms a hop
  # less on this machine. Only a power cut can lose the last writes; a cluster has real persistence.
  local sqlite_flags=(--sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=OFF)
  local dc_flags=()
  while read -r setting; do dc_flags+=(--dynamic-config-value "$setting"); done < <(dispatch_settings)
  nohup "$bin" server start-dev --ip 127.0.0.1 --port "$port" --ui-port "$ui_port" \
    --db-filename "$data_dir/temporal.db" "${sqlite_flags[@]}" --log-level warn "${sa_flags[@]}" "${dc_flags[@]}" \
    >"$log_file" 2>&1 &
  echo $! >"$pid_file"
  for _ in $(seq 1 120); do
    if healthy "$bin"; then
      register_search_attributes "$bin"
      echo "temporal dev server up on $address (UI http://localhost:$ui_port)"
      return 0
    fi
    kill -0 "$(cat "$pid_file")" 2>/dev/null || break
    sleep 0.5
  done
  echo "temporal dev server did not become healthy; last lines of $log_file:" >&2
  tail -20 "$log_file" >&2 || true
  return 1
}

stop() {
  [ -f "$pid_file" ] || { echo "no temporal dev server started by lockwarden"; return 0; }
  local pid; pid="$(cat "$pid_file")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
  echo "temporal dev server stopped"
}

status() {
  local bin; bin="$(temporal_bin)"
  if healthy "$bin"; then echo "up on $address"; else echo "down"; return 1; fi
}

case "${1:-}" in
  start) start ;;
  settings) dispatch_settings ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status|settings" >&2; exit 2 ;;
esac
