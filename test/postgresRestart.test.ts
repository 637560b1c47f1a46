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
});
