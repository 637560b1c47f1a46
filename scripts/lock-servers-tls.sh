# Sourced by lock-servers.sh when LOCKWARDEN_TLS=1: the same three servers as production runs them,
# over TLS with credentials. Redis: tls-port only, ACL users (the default one behind a password).
# PostgreSQL: ssl on, SCRAM passwords, and a client certificate from the test CA required of every
# connection. etcd: TLS on its client port, a client certificate required (--trusted-ca-file), and
# RBAC (a lockwarden user whose role covers only the lockwarden/ prefix). The CA and certificates
# (devkit/certificates.ts) and random passwords live in the data directory; devkit/servers.ts builds
# the URLs from them. Users: admin (setup), lockwarden, and outsider (allowed nothing of
# lockwarden's: the tests' "user without permission").

pki="$data/pki"
secrets="$data/secrets"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

secure_material() {
  [ -f "$pki/complete" ] || (cd "$root" && node --import tsx devkit/certificates.ts "$pki" >/dev/null)
  mkdir -p "$secrets" && chmod 700 "$secrets"
  local name
  for name in redis-default redis-admin redis-lockwarden redis-outsider pg-admin pg-lockwarden pg-outsider etcd-root etcd-lockwarden etcd-outsider; do
    [ -s "$secrets/$name" ] || { openssl rand -hex 16 >"$secrets/$name"; chmod 600 "$secrets/$name"; }
  done
}
secret() { cat "$secrets/$1"; }

redis_cli() { REDISCLI_AUTH="$(secret redis-admin)" redis-cli --tls --cacert "$pki/lockwarden-test-ca.pem" -h 127.0.0.1 -p "$REDIS_PORT" --user admin "$@"; }
redis_up() { redis_cli ping 2>/dev/null | grep -q PONG; }
start_redis() {
  secure_material
  redis_up && return 0
  mkdir -p "$data/redis"
  # The default user stays on, behind a password nobody is given. Redis replays a script's writes
  # from the AOF as a MULTI/EXEC that it re-checks against the default user's ACL; with that user
  # off, every one is dropped on restart and the token counters fall back (redis/redis#14541, fixed
  # upstream by #14545; Debian's 7.0.15 has it). The fault campaign over TLS found it: tokens reused.
  cat >"$data/redis.conf" <<CONF
bind 127.0.0.1
port 0
tls-port $REDIS_PORT
tls-cert-file $pki/server.pem
tls-key-file $pki/server-key.pem
tls-ca-cert-file $pki/lockwarden-test-ca.pem
tls-auth-clients optional
dir $data/redis
appendonly yes
appendfsync always
save ""
daemonize yes
pidfile $data/redis.pid
logfile $data/redis.log
user default on >$(secret redis-default) ~* &* +@all
user admin on >$(secret redis-admin) ~* &* +@all
user lockwarden on >$(secret redis-lockwarden) ~lockwarden:* &* +@all -@dangerous
user outsider on >$(secret redis-outsider) ~elsewhere:* &* +@all -@dangerous
CONF
  chmod 600 "$data/redis.conf"
  redis-server "$data/redis.conf"
  wait_until redis redis_up
}
stop_redis() {
  redis_up || return 0
  redis_cli shutdown >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do redis_up || return 0; sleep 0.1; done
}

pg_env() {
  PGPASSWORD="$(secret pg-admin)" PGSSLMODE=verify-full PGSSLROOTCERT="$pki/lockwarden-test-ca.pem" \
    PGSSLCERT="$pki/lockwarden-client.pem" PGSSLKEY="$pki/lockwarden-client-key.pem" "$@"
}
psql_admin() { pg_env "$(pg_bin)/psql" -h 127.0.0.1 -p "$PG_PORT" -U admin -d postgres -v ON_ERROR_STOP=1 -tAc "$1"; }
start_postgres() {
  secure_material
  postgres_up && return 0
  local bin; bin="$(pg_bin)"
  if [ ! -f "$data/postgres/PG_VERSION" ]; then
    mkdir -p "$data/postgres"
    [ "$(id -u)" = 0 ] && chown postgres "$data/postgres" "$data"
    # initdb reads the password as the postgres user, which cannot enter the secrets directory.
    local pwfile="$data/postgres-admin.pw"
    (umask 077 && cp "$secrets/pg-admin" "$pwfile")
    [ "$(id -u)" != 0 ] || chown postgres "$pwfile"
    as_pg "$bin/initdb" -D "$data/postgres" -U admin --pwfile="$pwfile" --auth=scram-sha-256 >"$data/postgres-init.log"
    rm -f "$pwfile"
    # Every connection: TLS, a password (SCRAM), and a client certificate from the test CA.
    echo "hostssl all all 127.0.0.1/32 scram-sha-256 clientcert=verify-ca" >"$data/postgres/pg_hba.conf"
    cp "$pki/server.pem" "$pki/server-key.pem" "$pki/lockwarden-test-ca.pem" "$data/postgres/"
    [ "$(id -u)" = 0 ] && chown postgres "$data/postgres/"*.pem
    chmod 600 "$data/postgres/server-key.pem"
  fi
  [ "$(id -u)" = 0 ] && chown postgres "$data"
  as_pg "$bin/pg_ctl" -D "$data/postgres" -l "$data/postgres.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k '' -c fsync=on -c ssl=on -c ssl_cert_file=server.pem -c ssl_key_file=server-key.pem -c ssl_ca_file=lockwarden-test-ca.pem -c password_encryption=scram-sha-256" start >/dev/null
  wait_until postgres postgres_up
  psql_admin "SELECT 1 FROM pg_roles WHERE rolname='lockwarden'" | grep -q 1 || {
    psql_admin "CREATE ROLE lockwarden LOGIN PASSWORD '$(secret pg-lockwarden)'" >/dev/null
    psql_admin "CREATE ROLE outsider LOGIN PASSWORD '$(secret pg-outsider)'" >/dev/null
    psql_admin "CREATE DATABASE lockwarden OWNER lockwarden" >/dev/null
  }
}

etcdctl_root() {
  etcdctl --endpoints "https://127.0.0.1:$ETCD_PORT" --cacert "$pki/lockwarden-test-ca.pem" \
    --cert "$pki/lockwarden-client.pem" --key "$pki/lockwarden-client-key.pem" "$@"
}
# /health answers without a user once authentication is on (etcdctl's health check then needs one).
etcd_up() {
  curl -fsS --cacert "$pki/lockwarden-test-ca.pem" --cert "$pki/lockwarden-client.pem" \
    --key "$pki/lockwarden-client-key.pem" "https://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q true
}
start_etcd() {
  secure_material
  etcd_up || launch_etcd
  etcd_rbac
}
# Auto-compaction: as scripts/lock-servers.sh says.
launch_etcd() {
  mkdir -p "$data/etcd"
  nohup etcd --name lockwarden --data-dir "$data/etcd" \
    --listen-client-urls "https://127.0.0.1:$ETCD_PORT" --advertise-client-urls "https://127.0.0.1:$ETCD_PORT" \
    --cert-file "$pki/server.pem" --key-file "$pki/server-key.pem" --trusted-ca-file "$pki/lockwarden-test-ca.pem" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "lockwarden=http://127.0.0.1:$ETCD_PEER_PORT" \
    --auto-compaction-mode periodic --auto-compaction-retention 10m >"$data/etcd.log" 2>&1 &
  echo $! >"$data/etcd.pid"
  wait_until etcd etcd_up
}
etcd_rbac() {
  [ -f "$data/etcd/rbac-done" ] && return 0
  # RBAC as an operator sets it up: root, then a role per prefix, then authentication on.
  etcdctl_root user add root --new-user-password "$(secret etcd-root)" --interactive=false >/dev/null
  etcdctl_root user grant-role root root >/dev/null
  etcdctl_root role add lockwarden >/dev/null
  etcdctl_root role grant-permission lockwarden --prefix=true readwrite lockwarden/ >/dev/null
  etcdctl_root user add lockwarden --new-user-password "$(secret etcd-lockwarden)" --interactive=false >/dev/null
  etcdctl_root user grant-role lockwarden lockwarden >/dev/null
  etcdctl_root role add elsewhere >/dev/null
  etcdctl_root role grant-permission elsewhere --prefix=true readwrite elsewhere/ >/dev/null
  etcdctl_root user add outsider --new-user-password "$(secret etcd-outsider)" --interactive=false >/dev/null
  etcdctl_root user grant-role outsider elsewhere >/dev/null
  etcdctl_root auth enable >/dev/null || return 1
  touch "$data/etcd/rbac-done"
}
