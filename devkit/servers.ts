/** The lock servers the tests' global setup starts (scripts/lock-servers.sh), by backend. */
export const SERVER_URLS = {
  redis: `redis://127.0.0.1:${process.env.LOCKWARDEN_REDIS_PORT ?? 16379}`,
  postgres: `postgres://lockwarden@127.0.0.1:${process.env.LOCKWARDEN_PG_PORT ?? 15432}/lockwarden`,
  etcd: `etcd://127.0.0.1:${process.env.LOCKWARDEN_ETCD_PORT ?? 12379}`,
};
