#!/usr/bin/env bash
# Makes what docker-compose.yml needs and ships none of: a CA and certificates for Temporal's
# frontend, etcd and the clients (compose/certs), random passwords and the lock service URL
# (compose/secrets, mounted as Docker secrets), and TEMPORAL_DB_PASSWORD in .env. Idempotent: what
# exists is kept. A production deployment brings its own CA and secret store instead.
#   scripts/compose-secrets.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
certs="$root/compose/certs"
secrets="$root/compose/secrets"
cd "$root"

# The server certificate names every service a client reaches over TLS.
node --import tsx devkit/certificates.ts "$certs" temporal-frontend etcd-1 etcd-2 etcd-3 lock-redis >/dev/null
mkdir -p "$secrets"
# The CA's key signs nothing after this: it leaves the mounted directory, with the tests' stranger CA.
[ -f "$certs/lockwarden-test-ca-key.pem" ] && mv "$certs/lockwarden-test-ca-key.pem" "$secrets/ca-key.pem"
rm -f "$certs"/stranger-* "$certs"/*.csr "$certs"/*.ext "$certs"/*.srl
password() { [ -s "$secrets/$1" ] || openssl rand -hex 24 >"$secrets/$1"; }
for name in etcd-root-password etcd-lockwarden-password redis-lockwarden-password lock-postgres-password; do password "$name"; done

# Redis's users: lockwarden's, on lockwarden's keys only; the default user behind a password nobody
# is given. Not "off": Redis replays script writes from the AOF as MULTI/EXEC checked against the
# default user, and drops them all when it is off, so token counters fall back on restart
# (redis/redis#14541; docs/lock-services.md).
[ -s "$secrets/redis-users.acl" ] ||
  printf 'user default on >%s ~* &* +@all\nuser lockwarden on >%s ~lockwarden:* &* +@all -@dangerous\n' \
    "$(openssl rand -hex 24)" "$(cat "$secrets/redis-lockwarden-password")" >"$secrets/redis-users.acl"

# The workers' LOCK_SERVICE_URL (read from LOCK_SERVICE_URL_FILE): etcd over TLS as the RBAC user.
c=/etc/lockwarden/certs
[ -s "$secrets/lock-service-url" ] ||
  printf 'etcds://lockwarden:%s@etcd-1:2379,etcd-2:2379,etcd-3:2379?sslrootcert=%s/lockwarden-test-ca.pem&sslcert=%s/lockwarden-client.pem&sslkey=%s/lockwarden-client-key.pem\n' \
    "$(cat "$secrets/etcd-lockwarden-password")" "$c" "$c" "$c" >"$secrets/lock-service-url"
# Readable inside the containers, whose users are not root (the node user, temporal's, redis's); the
# directories keep them from other users of this machine only as far as 0711 does. A production
# deployment mounts them from its secret store instead.
chmod 711 "$certs" "$secrets"
chmod 644 "$secrets"/* "$certs"/*.pem
chmod 600 "$secrets/ca-key.pem"

grep -q '^TEMPORAL_DB_PASSWORD=' .env 2>/dev/null || echo "TEMPORAL_DB_PASSWORD=$(openssl rand -hex 24)" >>.env
chmod 600 .env
echo "compose secrets ready: $certs, $secrets, .env"
