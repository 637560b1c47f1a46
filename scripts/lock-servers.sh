#!/usr/bin/env bash
# Installs (Debian packages) and runs the lock services the backend tests use, on loopback, each with
# its own data directory. The ports are fixed for the machine, so the data directories are too
# (/var/lib/lockwarden/servers as root, which the postgres user can reach; else
# ~/.local/state/lockwarden/servers): any checkout that restarts a server restarts it on the same data. Idempotent: `start` reuses a server that answers.
#   scripts/lock-servers.sh install
#   scripts/lock-servers.sh start|stop|restart|crash|status [redis|postgres|etcd|zookeeper ...]   (default: all)
#   LOCKWARDEN_TLS=1 scripts/lock-servers.sh ...   the first three over TLS with credentials (lock-servers-tls.sh)
# `restart` keeps the data directory: tokens must survive it. `crash` is a restart after the server
# dies without a clean shutdown (SIGKILL; PostgreSQL's immediate stop), for the fault campaign.
set -euo pipefail

if [ "$(id -u)" = 0 ]; then default_data=/var/lib/lockwarden/servers; else default_data="${XDG_STATE_HOME:-$HOME/.local/state}/lockwarden/servers"; fi
data="${LOCKWARDEN_SERVERS_DIR:-$default_data}"
REDIS_PORT="${LOCKWARDEN_REDIS_PORT:-16379}"
PG_PORT="${LOCKWARDEN_PG_PORT:-15432}"
ETCD_PORT="${LOCKWARDEN_ETCD_PORT:-12379}"
ETCD_PEER_PORT=$((ETCD_PORT + 1))
ZK_PORT="${LOCKWARDEN_ZK_PORT:-12181}"

# The server's bin directory (the client package alone ships a bin directory without initdb).
pg_bin() { ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 | xargs -r dirname; }

install() {
  local missing=()
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v etcdctl >/dev/null || missing+=(etcd-client)
  [ -n "$(pg_bin)" ] || missing+=(postgresql)
  [ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
  [ ${#missing[@]} -eq 0 ] && return 0
  local log; log="$(dirname "$data")/apt.log"
  mkdir -p "$(dirname "$log")"
  echo "installing ${missing[*]} (apt-get; output in $log)" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; } >"$log" 2>&1; then
    tail -20 "$log" >&2
    return 1
  fi
  [ -n "$(pg_bin)" ] || { echo "postgresql installed but no initdb found under /usr/lib/postgresql" >&2; return 1; }
}

# Runs a command as the postgres user when we are root (PostgreSQL refuses to run as root).
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

wait_until() {
  local what="$1"; shift
  for _ in $(seq 1 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "$what did not come up" >&2
  return 1
}

redis_up() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }
start_redis() {
  redis_up && return 0
  mkdir -p "$data/redis"
  # appendfsync always: a restarted server must never hand out a fencing token twice.
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$data/redis" --appendonly yes \
    --appendfsync always --save '' --daemonize yes --pidfile "$data/redis.pid" --logfile "$data/redis.log"
  wait_until redis redis_up
}
stop_redis() {
  redis_up || return 0
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do redis_up || return 0; sleep 0.1; done
}

postgres_up() { "$(pg_bin)/pg_isready" -h 127.0.0.1 -p "$PG_PORT" -q; }
start_postgres() {
  postgres_up && return 0
  local bin; bin="$(pg_bin)"
  if [ ! -f "$data/postgres/PG_VERSION" ]; then
    mkdir -p "$data/postgres"
    [ "$(id -u)" = 0 ] && chown postgres "$data/postgres"
    as_pg "$bin/initdb" -D "$data/postgres" -U lockwarden --auth=trust >"$data/postgres-init.log"
  fi
  [ "$(id -u)" = 0 ] && chown postgres "$data"
  as_pg "$bin/pg_ctl" -D "$data/postgres" -l "$data/postgres.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k '' -c fsync=on" start >/dev/null
  wait_until postgres postgres_up
  "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U lockwarden -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='lockwarden'" | grep -q 1 ||
    "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U lockwarden lockwarden
}
stop_postgres() {
  postgres_up || return 0
  as_pg "$(pg_bin)/pg_ctl" -D "$data/postgres" -m fast -w stop >/dev/null
}

etcd_up() { curl -fsS "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q true; }
# Auto-compaction keeps etcd's history (every revision of every key) to the last 10 minutes: without
# it the store grows with every grant ever made (docs/lock-services.md, "Storage").
start_etcd() {
  etcd_up && return 0
  mkdir -p "$data/etcd"
  nohup etcd --name lockwarden --data-dir "$data/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "lockwarden=http://127.0.0.1:$ETCD_PEER_PORT" \
    --auto-compaction-mode periodic --auto-compaction-retention 10m >"$data/etcd.log" 2>&1 &
  echo $! >"$data/etcd.pid"
  wait_until etcd etcd_up
}
# Stops the server whose pid is in $data/<name>.pid: SIGTERM, up to five seconds, then SIGKILL.
stop_by_pid() {
  local file="$data/$1.pid" pid
  [ -f "$file" ] || return 0
  pid="$(cat "$file")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}
# Kills it as a crash would (SIGKILL), and waits until it no longer answers.
crash_by_pid() {
  local file="$data/$1.pid"
  [ -f "$file" ] || return 0
  kill -9 "$(cat "$file")" 2>/dev/null || true
  for _ in $(seq 1 50); do "${1}_up" || break; sleep 0.1; done
  rm -f "$file"
}
stop_etcd() { stop_by_pid etcd; }

# ZooKeeper 3.8 from Debian (the zookeeper package; its jar names its own dependencies), one server
# in standalone mode. Its transaction log is synced before it answers (forceSync, the default), so a
# token (a zxid) is never issued twice across a crash. No admin server: its port 8080 would clash.
zookeeper_up() {
  local reply=''
  { exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT" && printf ruok >&3 && read -r -t 2 reply <&3; } 2>/dev/null
  exec 3>&- 2>/dev/null
  [ "$reply" = imok ]
}
zookeeper_classpath() {
  local cp=/usr/share/java/zookeeper.jar
  [ -f /usr/share/java/slf4j-simple.jar ] && cp="$cp:/usr/share/java/slf4j-simple.jar"
  echo "$cp"
}
start_zookeeper() {
  zookeeper_up && return 0
  mkdir -p "$data/zookeeper"
  printf '%s\n' tickTime=2000 "dataDir=$data/zookeeper" "clientPort=$ZK_PORT" clientPortAddress=127.0.0.1 \
    admin.enableServer=false 4lw.commands.whitelist=ruok,srvr,mntr autopurge.purgeInterval=1 >"$data/zookeeper.cfg"
  nohup java -Xmx256m -cp "$(zookeeper_classpath)" org.apache.zookeeper.server.quorum.QuorumPeerMain \
    "$data/zookeeper.cfg" >"$data/zookeeper.log" 2>&1 &
  echo $! >"$data/zookeeper.pid"
  wait_until zookeeper zookeeper_up
}
stop_zookeeper() { stop_by_pid zookeeper; }
crash_zookeeper() { crash_by_pid zookeeper; }

# Kills a server as a crash would: no shutdown, no final flush beyond what it already made durable.
crash_redis() {
  [ -f "$data/redis.pid" ] && kill -9 "$(cat "$data/redis.pid")" 2>/dev/null || true
  for _ in $(seq 1 50); do redis_up || return 0; sleep 0.1; done
}
crash_postgres() {
  postgres_up || return 0
  as_pg "$(pg_bin)/pg_ctl" -D "$data/postgres" -m immediate -w stop >/dev/null
}
crash_etcd() { crash_by_pid etcd; }

# LOCKWARDEN_TLS=1: the same servers over TLS with credentials (scripts/lock-servers-tls.sh).
if [ "${LOCKWARDEN_TLS:-0}" = 1 ]; then
  # shellcheck source=lock-servers-tls.sh
  source "$(dirname "${BASH_SOURCE[0]}")/lock-servers-tls.sh"
fi

status_of() { if "${1}_up"; then echo "$1: up"; else echo "$1: down"; return 1; fi; }

cmd="${1:-}"; shift || true
servers=("$@")
# ZooKeeper runs plain only: lockwarden's ZooKeeper client (node-zookeeper-client) speaks no TLS.
if [ ${#servers[@]} -eq 0 ]; then
  if [ "${LOCKWARDEN_TLS:-0}" = 1 ]; then servers=(redis postgres etcd); else servers=(redis postgres etcd zookeeper); fi
fi
for s in "${servers[@]}"; do
  case "$s" in redis|postgres|etcd|zookeeper) ;; *) echo "unknown server: $s (redis, postgres, etcd, zookeeper)" >&2; exit 2 ;; esac
  if [ "$s" = zookeeper ] && [ "${LOCKWARDEN_TLS:-0}" = 1 ]; then
    echo "no ZooKeeper over TLS: lockwarden's ZooKeeper client speaks no TLS" >&2
    exit 2
  fi
done
case "$cmd" in
  install) install ;;
  start) install; mkdir -p "$data"; for s in "${servers[@]}"; do "start_$s"; done; echo "lock servers up: ${servers[*]}" ;;
  stop) for s in "${servers[@]}"; do "stop_$s"; done ;;
  restart) for s in "${servers[@]}"; do "stop_$s"; "start_$s"; done ;;
  crash) for s in "${servers[@]}"; do "crash_$s"; "start_$s"; done ;;
  status) rc=0; for s in "${servers[@]}"; do status_of "$s" || rc=1; done; exit $rc ;;
  *) echo "usage: $0 install | start|stop|restart|crash|status [redis|postgres|etcd|zookeeper ...]" >&2; exit 2 ;;
esac
