#!/usr/bin/env bash
# lockwarden on a cluster, on this one machine: Temporal's own server as separate service processes
# on PostgreSQL, a three-member etcd, a three-server ZooKeeper ensemble, two lock workers and a model
# worker, each "host" a network namespace joined to one bridge (README, "Running on more than one
# machine"). The lock workers use etcd; the ZooKeeper ensemble is there for the campaign on it. Needs root.
#   scripts/cluster.sh up|down|status|env
#   scripts/cluster.sh fault kill|start <process>     (etcd-1..3, zk-1..3, history-1..2, frontend, lock-1..2, ...)
#   scripts/cluster.sh fault cut|heal <host>          (every packet in or out dropped, then allowed)
#   scripts/cluster.sh fault partition|heal etcd-N    (the same, for an etcd member or zk-N)
#   scripts/cluster.sh fault leader|zk-leader         (which etcd member, which ZooKeeper server leads)
#   scripts/cluster.sh fault slow|unslow [kbit]       (the links between etcd members throttled)
# Idempotent: `up` starts what is down and leaves what answers. Builds (Temporal's server, its SQL
# tool, its Web UI) are cached outside the checkout, as install-temporal.sh caches the CLI's.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
state="${LOCKWARDEN_CLUSTER_DIR:-/var/lib/lockwarden/cluster}"
TEMPORAL_SERVER_VERSION=1.29.1
UI_SERVER_VERSION=2.42.1 # the Web UI the pinned CLI embeds
builds="${LOCKWARDEN_TOOLS_BIN:-$HOME/.cache/lockwarden/bin}/temporal-server-v$TEMPORAL_SERVER_VERSION"
ui_builds="${LOCKWARDEN_TOOLS_BIN:-$HOME/.cache/lockwarden/bin}/temporal-ui-v$UI_SERVER_VERSION"
PG_PORT=15532 # Temporal's own database, on loopback: only Temporal's services reach it

# The hosts. Temporal's services and the Web UI are addresses on the bridge (the root namespace);
# etcd members and workers are namespaces of their own, so a fault can cut one off alone.
BRIDGE=lwc0
SUBNET_HOST=10.88.0.1
declare -A ADDR=(
  [frontend]=10.88.0.2 [history-1]=10.88.0.3 [matching]=10.88.0.4 [worker]=10.88.0.5
  [ui]=10.88.0.6 [history-2]=10.88.0.7
  [etcd-1]=10.88.0.11 [etcd-2]=10.88.0.12 [etcd-3]=10.88.0.13
  [zk-1]=10.88.0.14 [zk-2]=10.88.0.15 [zk-3]=10.88.0.16
  [lock-1]=10.88.0.21 [lock-2]=10.88.0.22 [model]=10.88.0.31
)
TEMPORAL_SERVICES=(frontend history-1 history-2 matching worker)
ETCD_MEMBERS=(etcd-1 etcd-2 etcd-3)
ZK_MEMBERS=(zk-1 zk-2 zk-3)
WORKERS=(lock-1 lock-2 model)
FRONTEND="${ADDR[frontend]}:7233"
ETCD_URL="etcd://${ADDR[etcd-1]}:2379,${ADDR[etcd-2]}:2379,${ADDR[etcd-3]}:2379"
ZK_URL="zookeeper://${ADDR[zk-1]}:2181,${ADDR[zk-2]}:2181,${ADDR[zk-3]}:2181/lockwarden"
UI_URL="http://${ADDR[ui]}:8080"
TASK_QUEUE=lockwarden
MODEL_TASK_QUEUE=lockwarden-model

say() { echo "cluster: $*" >&2; }
need_root() { [ "$(id -u)" = 0 ] || { say "needs root (network namespaces, veth pairs, iptables)"; exit 1; }; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 | xargs -r dirname; }
temporal_cli() { bash "$here/install-temporal.sh"; }
netns_of() { echo "lwc-$1"; }

install_packages() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  [ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
  [ -n "$(pg_bin)" ] || missing+=(postgresql)
  command -v ip >/dev/null || missing+=(iproute2)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v curl >/dev/null || missing+=(curl)
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]} (apt-get; output in $state/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; } >"$state/apt.log" 2>&1 || { tail -20 "$state/apt.log" >&2; return 1; }
}

# Temporal's server and its SQL schema tool from the same Go module as the CLI (its build cache makes
# this about two minutes the first time); the Web UI's server from the module the CLI embeds.
build_binaries() {
  command -v go >/dev/null || { say "Go is needed to build Temporal's server"; return 1; }
  if [ ! -x "$builds/server" ] || [ ! -x "$builds/sql" ]; then
    say "building Temporal's server v$TEMPORAL_SERVER_VERSION and its SQL tool with go install (once)"
    mkdir -p "$builds"
    GOBIN="$builds" GOFLAGS=-mod=mod go install "go.temporal.io/server/cmd/server@v$TEMPORAL_SERVER_VERSION" >&2
    GOBIN="$builds" GOFLAGS=-mod=mod go install "go.temporal.io/server/cmd/tools/sql@v$TEMPORAL_SERVER_VERSION" >&2
  fi
  if [ ! -x "$ui_builds/server" ]; then
    say "building Temporal's Web UI server v$UI_SERVER_VERSION with go install (once)"
    mkdir -p "$ui_builds"
    GOBIN="$ui_builds" GOFLAGS=-mod=mod go install "github.com/temporalio/ui-server/v2/cmd/server@v$UI_SERVER_VERSION" >&2
  fi
}
# The schema files ship in the server's module, which the build above put in Go's module cache.
schema_dir() { echo "$(go env GOMODCACHE)/go.temporal.io/server@v$TEMPORAL_SERVER_VERSION/schema/postgresql/v12"; }

# One bridge, an address on it per Temporal service, a namespace and veth pair per other host.
ensure_network() {
  # Bridged frames would otherwise cross the root namespace's iptables, where a cut is not meant to be.
  [ -w /proc/sys/net/bridge/bridge-nf-call-iptables ] && echo 0 >/proc/sys/net/bridge/bridge-nf-call-iptables
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$SUBNET_HOST/24" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
  # Read whole before grep: under pipefail, `ip ... | grep -q` fails when grep stops reading early
  # (ip gets SIGPIPE), and the address would be added twice ("Address already assigned").
  local assigned
  for name in "${TEMPORAL_SERVICES[@]}" ui; do
    assigned="$(ip addr show dev "$BRIDGE")"
    grep -q "inet ${ADDR[$name]}/" <<<"$assigned" || ip addr add "${ADDR[$name]}/32" dev "$BRIDGE"
  done
  for name in "${ETCD_MEMBERS[@]}" "${ZK_MEMBERS[@]}" "${WORKERS[@]}"; do ensure_host "$name"; done
}
ensure_host() {
  local name="$1" ns; ns="$(netns_of "$1")"
  grep -qw "$ns" <<<"$(ip netns list)" || ip netns add "$ns"
  if ! ip link show "$ns" >/dev/null 2>&1; then
    ip link add "$ns" type veth peer name eth0 netns "$ns"
    ip link set "$ns" master "$BRIDGE" up
    ip -n "$ns" addr add "${ADDR[$name]}/24" dev eth0
  fi
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}
# The model worker's host reaches Temporal's frontend and nothing else of the cluster (no lock service).
fence_model_host() {
  local ns; ns="$(netns_of model)"
  ip netns exec "$ns" iptables -F OUTPUT
  ip netns exec "$ns" iptables -A OUTPUT -o lo -j ACCEPT
  ip netns exec "$ns" iptables -A OUTPUT -d "${ADDR[frontend]}" -p tcp --dport 7233 -j ACCEPT
  ip netns exec "$ns" iptables -A OUTPUT -d 10.88.0.0/24 -j REJECT
}

pids="$state/pids"
logs="$state/logs"
alive() { [ -f "$pids/$1" ] && kill -0 "$(cat "$pids/$1")" 2>/dev/null; }
# Starts a process in the background in a process group of its own (setsid: its pid is the group's),
# its pid and log under the state directory.
launch() {
  local name="$1"; shift
  setsid nohup "$@" >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pids/$name"
}
# Signals the whole group: a worker runs under tsx, whose node child would outlive its parent and keep
# the old code running (and its metrics port taken) after a kill.
stop_process() {
  local name="$1" signal="${2:-TERM}" pid
  [ -f "$pids/$name" ] || return 0
  pid="$(cat "$pids/$name")"
  kill "-$signal" -- "-$pid" 2>/dev/null || kill "-$signal" "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 -- "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
  rm -f "$pids/$name"
}
wait_for() {
  local what="$1"; shift
  for _ in $(seq 1 150); do "$@" >/dev/null 2>&1 && return 0; sleep 0.4; done
  say "$what did not come up (logs in $logs)"
  return 1
}

as_pg() { runuser -u postgres -- "$@"; }
pg_up() { "$(pg_bin)/pg_isready" -h 127.0.0.1 -p "$PG_PORT" -q; }
start_postgres() {
  pg_up && return 0
  local bin; bin="$(pg_bin)"
  if [ ! -f "$state/postgres/PG_VERSION" ]; then
    mkdir -p "$state/postgres"; chown postgres "$state/postgres"
    as_pg "$bin/initdb" -D "$state/postgres" -U temporal --auth=trust >"$logs/postgres-init.log"
  fi
  chown postgres "$state" "$logs"
  as_pg "$bin/pg_ctl" -D "$state/postgres" -l "$logs/postgres.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k '' -c max_connections=300" start >/dev/null
}
# Temporal's two databases at the schema versions the server needs, as an operator sets them up.
setup_schemas() {
  local sql=("$builds/sql" --plugin postgres12 --ep 127.0.0.1 -p "$PG_PORT" -u temporal --pw temporal)
  local db dir
  for db in temporal temporal_visibility; do
    dir="$(schema_dir)/$([ "$db" = temporal ] && echo temporal || echo visibility)/versioned"
    "$(pg_bin)/psql" -h 127.0.0.1 -p "$PG_PORT" -U temporal -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$db'" | grep -q 1 ||
      "${sql[@]}" --db "$db" create-database >>"$logs/schema.log" 2>&1
    "$(pg_bin)/psql" -h 127.0.0.1 -p "$PG_PORT" -U temporal -d "$db" -tAc "SELECT to_regclass('schema_version')" | grep -q schema_version ||
      "${sql[@]}" --db "$db" setup-schema -v 0.0 >>"$logs/schema.log" 2>&1
    "${sql[@]}" --db "$db" update-schema -d "$dir" >>"$logs/schema.log" 2>&1
  done
}

start_temporal_service() {
  local name="$1" service="${1%-[0-9]}"
  alive "$name" && return 0
  launch "$name" env POSTGRES_SEEDS=127.0.0.1 POSTGRES_PORT="$PG_PORT" POSTGRES_USER=temporal POSTGRES_PWD=temporal \
    TEMPORAL_BIND_IP="${ADDR[$name]}" TEMPORAL_FRONTEND_ADDRESS="$FRONTEND" \
    TEMPORAL_DYNAMIC_CONFIG="$root/compose/temporal-dynamic-config.yaml" \
    "$builds/server" --root / --config "$root/compose/temporal" --env lockwarden --allow-no-auth start --service "$service"
}
temporal_up() { "$(temporal_cli)" operator cluster health --address "$FRONTEND" 2>/dev/null | grep -q SERVING; }
# The namespace and lockwarden's search attributes, registered as an operator would with the CLI.
register_namespace() {
  local cli; cli="$(temporal_cli)"
  wait_for "the default namespace" bash -c "'$cli' operator namespace describe default --address '$FRONTEND' ||
    '$cli' operator namespace create default --retention 72h --address '$FRONTEND'"
  local existing name type
  existing=$("$cli" operator search-attribute list --namespace default --address "$FRONTEND" 2>/dev/null || true)
  for entry in $(grep -v '^#' "$here/search-attributes.txt" | grep -v '^$'); do
    name="${entry%%=*}"; type="${entry#*=}"
    grep -qw "$name" <<<"$existing" && continue
    # A new namespace reaches every frontend's cache within seconds; until then it is "not found".
    wait_for "search attribute $name" "$cli" operator search-attribute create --namespace default \
      --address "$FRONTEND" --name "$name" --type "$type"
  done
}

etcd_cluster() { local m out=(); for m in "${ETCD_MEMBERS[@]}"; do out+=("$m=http://${ADDR[$m]}:2380"); done; (IFS=,; echo "${out[*]}"); }
# Auto-compaction keeps etcd's history (every revision of every key) to the last 10 minutes: without
# it the store grows with every grant ever made (docs/lock-services.md, "Storage").
start_etcd_member() {
  local name="$1" ip="${ADDR[$1]}"
  alive "$name" && return 0
  mkdir -p "$state/$name"
  launch "$name" ip netns exec "$(netns_of "$name")" etcd --name "$name" --data-dir "$state/$name" \
    --listen-client-urls "http://$ip:2379" --advertise-client-urls "http://$ip:2379" \
    --listen-peer-urls "http://$ip:2380" --initial-advertise-peer-urls "http://$ip:2380" \
    --initial-cluster "$(etcd_cluster)" --initial-cluster-state new --initial-cluster-token lockwarden-etcd \
    --auto-compaction-mode periodic --auto-compaction-retention 10m
}
etcd_up() { curl -fsS --max-time 2 "http://${ADDR[$1]}:2379/health" | grep -q '"health":"true"'; }
# Which member leads, by asking each for its status (etcd's v3 JSON gateway: no etcdctl needed).
etcd_leader() {
  local m status
  for m in "${ETCD_MEMBERS[@]}"; do
    status="$(curl -fsS --max-time 2 -X POST -d '{}' "http://${ADDR[$m]}:2379/v3/maintenance/status" 2>/dev/null)" || continue
    if [ "$(sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p' <<<"$status")" = "$(sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' <<<"$status")" ]; then
      echo "$m"; return 0
    fi
  done
  return 1
}

# ZooKeeper's ensemble (Debian's zookeeper package, as scripts/lock-servers.sh runs one server): three
# servers, one per host, each its number as its myid. Its transaction log is synced before a write is
# acknowledged (forceSync, the default): a zxid, lockwarden's token, is never issued twice.
zk_classpath() {
  local cp=/usr/share/java/zookeeper.jar
  [ -f /usr/share/java/slf4j-simple.jar ] && cp="$cp:/usr/share/java/slf4j-simple.jar"
  echo "$cp"
}
start_zk_member() {
  local name="$1" ip="${ADDR[$1]}" dir="$state/$1" m
  alive "$name" && return 0
  mkdir -p "$dir/data"
  echo "${name#zk-}" >"$dir/data/myid"
  {
    printf '%s\n' tickTime=2000 initLimit=10 syncLimit=5 "dataDir=$dir/data" clientPort=2181 \
      "clientPortAddress=$ip" admin.enableServer=false 4lw.commands.whitelist=ruok,srvr,mntr autopurge.purgeInterval=1
    for m in "${ZK_MEMBERS[@]}"; do echo "server.${m#zk-}=${ADDR[$m]}:2888:3888"; done
  } >"$dir/zoo.cfg"
  launch "$name" ip netns exec "$(netns_of "$name")" java -Xmx256m -cp "$(zk_classpath)" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg"
}
# One of ZooKeeper's four-letter words, asked of a server (it answers and closes the connection).
zk_ask() {
  local reply=''
  { exec 3<>"/dev/tcp/${ADDR[$1]}/2181" && printf '%s' "$2" >&3 && reply="$(timeout 2 cat <&3)"; } 2>/dev/null
  exec 3>&- 2>/dev/null
  echo "$reply"
}
# A server that serves: one in a quorum, as leader or follower.
zk_up() { zk_ask "$1" srvr | grep -q '^Mode: \(leader\|follower\)'; }
zk_leader() {
  local m
  for m in "${ZK_MEMBERS[@]}"; do zk_ask "$m" srvr | grep -q '^Mode: leader' && { echo "$m"; return 0; }; done
  return 1
}

start_ui() {
  alive ui && return 0
  launch ui env TEMPORAL_ADDRESS="$FRONTEND" TEMPORAL_UI_HOST="${ADDR[ui]}" TEMPORAL_UI_PORT=8080 \
    "$ui_builds/server" --root / --config "$root/compose/temporal-ui" --env lockwarden start
}

# The workers run this checkout's code; a cluster brought up by another checkout gets them restarted.
start_worker() {
  local name="$1" ip="${ADDR[$1]}" env_vars
  if alive "$name" && [ "$(cat "$state/$name.checkout" 2>/dev/null)" = "$root" ]; then return 0; fi
  stop_process "$name"
  env_vars=(TEMPORAL_ADDRESS="$FRONTEND" TEMPORAL_NAMESPACE=default LOG_LEVEL=info METRICS_PORT=9464 METRICS_HOST="$ip")
  if [ "$name" = model ]; then
    env_vars+=(LOCKWARDEN_MODEL_TASK_QUEUE="$MODEL_TASK_QUEUE")
    [ -n "${ANTHROPIC_API_KEY:-}" ] && env_vars+=(ANTHROPIC_API_KEY="$ANTHROPIC_API_KEY")
    launch "$name" ip netns exec "$(netns_of "$name")" env -i PATH="$PATH" HOME="$HOME" "${env_vars[@]}" \
      "$root/node_modules/.bin/tsx" "$root/worker/modelMain.ts"
  else
    env_vars+=(LOCKWARDEN_TASK_QUEUE="$TASK_QUEUE" LOCKWARDEN_MODEL_TASK_QUEUE="$MODEL_TASK_QUEUE"
      LOCK_SERVICE_URL="$ETCD_URL" LOCKWARDEN_ESCALATIONS_FILE="$state/$name-escalations.jsonl")
    launch "$name" ip netns exec "$(netns_of "$name")" env -i PATH="$PATH" HOME="$HOME" "${env_vars[@]}" \
      "$root/node_modules/.bin/tsx" "$root/worker/main.ts"
  fi
  echo "$root" >"$state/$name.checkout"
}

up() {
  need_root
  local started=$SECONDS
  mkdir -p "$state" "$pids" "$logs"
  install_packages
  build_binaries
  bash "$here/ensure-deps.sh" >&2
  ensure_network
  fence_model_host
  start_postgres
  wait_for postgres pg_up
  setup_schemas
  for m in "${ETCD_MEMBERS[@]}"; do start_etcd_member "$m"; done
  for m in "${ZK_MEMBERS[@]}"; do start_zk_member "$m"; done
  # The frontend alone first: every service writes the cluster's metadata when it starts, and the
  # first start of several at once races on that row (one fails on its unique key).
  start_temporal_service frontend
  wait_for "Temporal's frontend" temporal_up
  for s in "${TEMPORAL_SERVICES[@]}"; do start_temporal_service "$s"; done
  register_namespace
  for m in "${ETCD_MEMBERS[@]}"; do wait_for "$m" etcd_up "$m"; done
  wait_for "an etcd leader" etcd_leader
  for m in "${ZK_MEMBERS[@]}"; do wait_for "$m" zk_up "$m"; done
  start_ui
  for w in "${WORKERS[@]}"; do start_worker "$w"; done
  say "up in $((SECONDS - started)) s"
  status
}

down() {
  need_root
  local name
  for name in "${WORKERS[@]}" ui "${TEMPORAL_SERVICES[@]}" "${ETCD_MEMBERS[@]}" "${ZK_MEMBERS[@]}"; do stop_process "$name"; done
  [ -n "$(pg_bin)" ] && [ -f "$state/postgres/PG_VERSION" ] && pg_up && as_pg "$(pg_bin)/pg_ctl" -D "$state/postgres" -m fast -w stop >/dev/null
  for name in "${ETCD_MEMBERS[@]}" "${ZK_MEMBERS[@]}" "${WORKERS[@]}"; do
    ip link del "$(netns_of "$name")" 2>/dev/null || true
    ip netns del "$(netns_of "$name")" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  say "down (data kept in $state; remove it for a new cluster)"
}

status() {
  local name rc=0
  for name in postgres "${TEMPORAL_SERVICES[@]}" ui "${ETCD_MEMBERS[@]}" "${ZK_MEMBERS[@]}" "${WORKERS[@]}"; do
    if [ "$name" = postgres ]; then pg_up && echo "postgres: up (127.0.0.1:$PG_PORT)" || { echo "postgres: down"; rc=1; }
    elif alive "$name"; then echo "$name: up (${ADDR[$name]})"
    else echo "$name: down (${ADDR[$name]})"; rc=1; fi
  done
  echo "etcd leader: $(etcd_leader || echo none)"
  echo "ZooKeeper leader: $(zk_leader || echo none)"
  env_lines
  return $rc
}

# What a client on this machine sets to use the cluster (eval "$(scripts/cluster.sh env)").
env_lines() {
  echo "TEMPORAL_ADDRESS=$FRONTEND"
  echo "TEMPORAL_UI_URL=$UI_URL"
  echo "LOCK_SERVICE_URL=$ETCD_URL"
  echo "LOCKWARDEN_ZOOKEEPER_URL=$ZK_URL"
  echo "LOCKWARDEN_TASK_QUEUE=$TASK_QUEUE"
}

# Drops every packet in or out of a host (a cable pulled, connections hang), or lets them through.
cut_host() { ip netns exec "$(netns_of "$1")" iptables -I INPUT -i eth0 -j DROP -m comment --comment lwc-cut &&
  ip netns exec "$(netns_of "$1")" iptables -I OUTPUT -o eth0 -j DROP -m comment --comment lwc-cut; }
heal_host() {
  local ns; ns="$(netns_of "$1")"
  while ip netns exec "$ns" iptables -D INPUT -i eth0 -j DROP -m comment --comment lwc-cut 2>/dev/null; do :; done
  while ip netns exec "$ns" iptables -D OUTPUT -o eth0 -j DROP -m comment --comment lwc-cut 2>/dev/null; do :; done
}
# Throttles the peer traffic (port 2380) of every member: this kernel has no netem to add a fixed
# delay, so the links are shaped (htb) to a rate at which Raft's messages queue.
slow_peers() {
  local kbit="${1:-256}" m ns
  for m in "${ETCD_MEMBERS[@]}"; do
    ns="$(netns_of "$m")"
    ip netns exec "$ns" tc qdisc replace dev eth0 root handle 1: htb default 10 r2q 1000
    ip netns exec "$ns" tc class replace dev eth0 parent 1: classid 1:10 htb rate 10gbit
    ip netns exec "$ns" tc class replace dev eth0 parent 1: classid 1:20 htb rate "${kbit}kbit" ceil "${kbit}kbit"
    ip netns exec "$ns" tc filter replace dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 2380 0xffff flowid 1:20
    ip netns exec "$ns" tc filter replace dev eth0 parent 1: protocol ip prio 2 u32 match ip sport 2380 0xffff flowid 1:20
  done
}
unslow_peers() { local m; for m in "${ETCD_MEMBERS[@]}"; do ip netns exec "$(netns_of "$m")" tc qdisc del dev eth0 root 2>/dev/null || true; done; }

start_named() {
  case "$1" in
    etcd-*) start_etcd_member "$1"; wait_for "$1" etcd_up "$1" ;;
    zk-*) start_zk_member "$1"; wait_for "$1" zk_up "$1" ;;
    frontend|history-*|matching|worker) start_temporal_service "$1" ;;
    lock-*|model) start_worker "$1" ;;
    ui) start_ui ;;
    *) say "no process named $1"; return 2 ;;
  esac
}

fault() {
  need_root
  local what="${1:-}" target="${2:-}"
  case "$what" in
    kill) stop_process "$target" KILL ;;
    start) start_named "$target" ;;
    cut|partition) cut_host "$target" ;;
    heal) heal_host "$target" ;;
    slow) slow_peers "$target" ;;
    unslow) unslow_peers ;;
    leader) etcd_leader ;;
    zk-leader) zk_leader ;;
    *) say "usage: $0 fault kill|start <process> | cut|partition|heal <host> | slow [kbit] | unslow | leader | zk-leader"; return 2 ;;
  esac
}

case "${1:-}" in
  build) build_binaries ;;
  up) up ;;
  down) down ;;
  status) status ;;
  env) env_lines ;;
  fault) shift; fault "$@" ;;
  *) echo "usage: $0 build|up|down|status|env|fault ..." >&2; exit 2 ;;
esac
