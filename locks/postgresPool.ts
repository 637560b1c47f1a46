// A pg pool that survives its server restarting.
import { Pool, type PoolConfig } from 'pg';

/**
 * A `pg` pool that survives its server restarting. A connection the server drops (a restart, a
 * failover) is reported as an 'error' event: on the pool while the connection is idle, on the client
 * while it is checked out between two queries. Without a listener either would crash the process.
 * With these, the call in progress fails (and is retried by whoever made it) and the pool connects anew.
 */
export function resilientPool(config: PoolConfig): Pool {
  const pool = new Pool(config);
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
