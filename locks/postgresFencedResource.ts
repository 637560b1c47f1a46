// A FencedResource in PostgreSQL: a write's token checked in the same transaction.
import type { Pool, PoolClient } from 'pg';
import { fencingTokenSchema } from '../policy/lockContract/lockSchemas';
import {
  type FencedResource,
  type FencedWriteAttempt,
  type FencedWriteResult,
  InvalidFencingTokenError,
} from './fencedResource';
import { migratePostgres } from './postgresMigrations';

/**
 * A FencedResource kept in PostgreSQL: `write` receives the transaction's client, so the
 * application's own statements commit or roll back together with the token check.
 */
export class PostgresFencedResource implements FencedResource<PoolClient> {
  private constructor(private readonly pool: Pool) {}

  /** Runs the schema migrations, then serves fenced writes on the pool. */
  static async open(pool: Pool): Promise<PostgresFencedResource> {
    await migratePostgres(pool);
    return new PostgresFencedResource(pool);
  }

  async write<T>(
    resource: string,
    token: string,
    write: (tx: PoolClient) => T,
  ): Promise<FencedWriteResult<Awaited<T>>> {
    if (!fencingTokenSchema.safeParse(token).success) throw new InvalidFencingTokenError(token);
    const db = await this.pool.connect();
    try {
      await db.query('BEGIN');
      await db.query(
        'INSERT INTO lockwarden_fenced_resources (resource, newest_token) VALUES ($1, 0) ON CONFLICT DO NOTHING',
        [resource],
      );
      const { rows } = await db.query<{ newest_token: string }>(
        'SELECT newest_token FROM lockwarden_fenced_resources WHERE resource = $1 FOR UPDATE',
        [resource],
      );
      const newest = rows[0]!.newest_token;
      if (BigInt(newest) > BigInt(token)) {
        await db.query('ROLLBACK');
        await this.logAttempt(this.pool, resource, token, false, newest);
        return { accepted: false, newestToken: newest };
      }
      await db.query('UPDATE lockwarden_fenced_resources SET newest_token = $2 WHERE resource = $1', [
        resource,
        token,
      ]);
      const value = await write(db);
      await this.logAttempt(db, resource, token, true, token);
      await db.query('COMMIT');
      return { accepted: true, value };
    } catch (error) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      db.release();
    }
  }

  async newestToken(resource: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ newest_token: string }>(
      'SELECT newest_token FROM lockwarden_fenced_resources WHERE resource = $1',
      [resource],
    );
    return rows[0] && rows[0].newest_token !== '0' ? rows[0].newest_token : null;
  }

  async attempts(resource: string): Promise<FencedWriteAttempt[]> {
    const { rows } = await this.pool.query<{
      token: string;
      accepted: boolean;
      newest_token: string;
      at_ms: string;
    }>(
      'SELECT token, accepted, newest_token, at_ms FROM lockwarden_fenced_writes WHERE resource = $1 ORDER BY id',
      [resource],
    );
    return rows.map((r) => ({
      resource,
      token: r.token,
      accepted: r.accepted,
      newestToken: r.newest_token,
      at: Number(r.at_ms),
    }));
  }

  // An accepted write is logged in its own transaction; a refused one after the rollback.
  private async logAttempt(
    db: Pick<Pool, 'query'>,
    resource: string,
    token: string,
    accepted: boolean,
    newest: string,
  ): Promise<void> {
    await db.query(
      'INSERT INTO lockwarden_fenced_writes (resource, token, accepted, newest_token, at_ms) VALUES ($1, $2, $3, $4, $5)',
      [resource, token, accepted, newest, Date.now()],
    );
  }
}
