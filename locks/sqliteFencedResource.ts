import type Database from 'better-sqlite3';
import { fencingTokenSchema } from '../policy/lockSchemas';
import { type FencedResource, type FencedWriteResult, InvalidFencingTokenError } from './fencedResource';

/**
 * A FencedResource kept in a SQLite database: the application's own tables live in the same file,
 * and `write` runs synchronously inside the IMMEDIATE transaction that checks and records the token.
 */
export class SqliteFencedResource implements FencedResource<Database.Database> {
  private readonly newest;
  private readonly record;

  constructor(private readonly db: Database.Database) {
    db.exec(
      'CREATE TABLE IF NOT EXISTS lockwarden_fenced_resources (resource TEXT PRIMARY KEY, newest_token INTEGER NOT NULL) STRICT',
    );
    this.newest = db
      .prepare('SELECT newest_token FROM lockwarden_fenced_resources WHERE resource = ?')
      .pluck()
      .safeIntegers(true);
    this.record = db.prepare(
      `INSERT INTO lockwarden_fenced_resources (resource, newest_token) VALUES (?, ?)
       ON CONFLICT (resource) DO UPDATE SET newest_token = excluded.newest_token`,
    );
  }

  async write<T>(
    resource: string,
    token: string,
    write: (tx: Database.Database) => T,
  ): Promise<FencedWriteResult<Awaited<T>>> {
    const candidate = parseToken(token);
    return this.db
      .transaction((): FencedWriteResult<Awaited<T>> => {
        const newest = this.newest.get(resource) as bigint | undefined;
        if (newest !== undefined && newest > candidate)
          return { accepted: false, newestToken: newest.toString() };
        this.record.run(resource, candidate);
        const value = write(this.db);
        if (value instanceof Promise) throw new TypeError('a SQLite fenced write must be synchronous');
        return { accepted: true, value: value as Awaited<T> };
      })
      .immediate();
  }

  async newestToken(resource: string): Promise<string | null> {
    const newest = this.newest.get(resource) as bigint | undefined;
    return newest === undefined ? null : newest.toString();
  }
}

function parseToken(token: string): bigint {
  if (!fencingTokenSchema.safeParse(token).success) throw new InvalidFencingTokenError(token);
  return BigInt(token);
}
