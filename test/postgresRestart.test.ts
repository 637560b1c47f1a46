import { PostgresLockService } from '../locks/postgresLockService';
import { resilientPool } from '../locks/postgresPool';
import { ownServer } from './support/lockBackends';

// The PostgreSQL server crashes and comes back while a worker holds connections: idle in the pool,
// and checked out between two statements of a transaction. The worker must not crash with it. On a
// server of this suite's own: crashing the shared one would fail other suites' calls.
const server = ownServer('postgres', 'postgres-restart', 15534);

describe('a PostgreSQL restart under open connections', () => {
  beforeAll(() => server.start());
  afterAll(() => server.stop());

  it('fails the calls in flight and serves the next ones, idle and checked-out connections alike', async () => {
    const pool = resilientPool({ connectionString: server.url, max: 2 });
    try {
      const checkedOut = await pool.connect();
      await checkedOut.query('BEGIN');
      const idle = await pool.connect();
      idle.release(); // back in the pool, idle
      server.crash();
      await new Promise((resolve) => setTimeout(resolve, 200)); // the dropped sockets' events arrive
      // The checked-out client learns its connection is gone only when it is next used.
      await expect(checkedOut.query('SELECT 1')).rejects.toThrow();
      checkedOut.release(true);
      const { rows } = await pool.query<{ answer: number }>('SELECT 42 AS answer');
      expect(rows).toEqual([{ answer: 42 }]);
    } finally {
      await pool.end();
    }
  });

  it('opens a lock service started while its server is down: it waits for the server, within a bound', async () => {
    server.stop();
    // What the fault campaign caught: a worker replaced while the server restarted exited at once.
    const opening = PostgresLockService.open({ connectionString: server.url, connectWaitMs: 30_000 });
    const startedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    server.start();
    const locks = await opening;
    try {
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_500);
      const attempt = await locks.tryAcquire({ key: 'after-start', requester: 'a', ttlMs: 5_000 });
      expect(attempt.granted).toBe(true);
    } finally {
      await locks.close();
    }
    // A server that does not come back within the bound: the open fails with the connection error.
    server.stop();
    try {
      await expect(
        PostgresLockService.open({ connectionString: server.url, connectWaitMs: 1_000 }),
      ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      server.start();
    }
  });
});
