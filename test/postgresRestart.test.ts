import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { resilientPool } from '../locks/postgresPool';
import { SERVER_URLS } from './support/lockBackends';

// The PostgreSQL server crashes and comes back while a worker holds connections: idle in the pool,
// and checked out between two statements of a transaction. The worker must not crash with it.
const crashAndRestart = () =>
  execFileSync('bash', [path.join(__dirname, '..', 'scripts', 'lock-servers.sh'), 'crash', 'postgres'], {
    stdio: 'ignore',
  });

describe('a PostgreSQL restart under open connections', () => {
  it('fails the calls in flight and serves the next ones, idle and checked-out connections alike', async () => {
    const pool = resilientPool({ connectionString: SERVER_URLS.postgres, max: 2 });
    try {
      const checkedOut = await pool.connect();
      await checkedOut.query('BEGIN');
      const idle = await pool.connect();
      idle.release(); // back in the pool, idle
      crashAndRestart();
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
