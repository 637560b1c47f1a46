// A FencedResource in SQLite: a write's token checked in the same transaction.
import type Database from 'better-sqlite3';
import { fencingTokenSchema } from '../policy/lockContract/lockSchemas';
import {
  type FencedResource,
  type FencedWriteAttempt,
  type FencedWriteResult,
  InvalidFencingTokenError,
} from './fencedResource';

interface AttemptRow {
  resource: string;
  token: string;
  accepted: number;
  newest_token: string;
  at_ms: number;
}

/**
 * A FencedResource kept in a SQLite database: the application's own tables live in the same file,
 * and `write` runs synchronously inside the IMMEDIATE transaction that checks and records the token.
 */
export class SqliteFencedResource implements FencedResource<Database.Database> {
  private readonly newest;
  private readonly record;
  private readonly logAttempt;
  private readonly readAttempts;

  constructor(private readonly db: Database.Database) {
    db.exec(
      'CREATE TABLE IF NOT EXISTS lockwarden_fenced_resources (resource TEXT PRIMARY KEY, newest_token INTEGER NOT NULL) STRICT',
    );
    this.newest = db
      .prepare('SELECT newest_token FROM lockwarden_fenced_resources WHERE resource = ?')
      .pluck()
      .safeIntegers(true);
    db.exec(
      `CREATE TABLE IF NOT EXISTS lockwarden_fenced_writes (id INTEGER PRIMARY KEY, resource TEXT NOT NULL,
         token TEXT NOT NULL, accepted INTEGER NOT NULL, newest_token TEXT NOT NULL, at_ms INTEGER NOT NULL) STRICT`,
    );
    this.logAttempt = db.prepare(
      'INSERT INTO lockwarden_fenced_writes (resource, token, accepted, newest_token, at_ms) VALUES (?, ?, ?, ?, ?)',
    );
    this.readAttempts = db.prepare(
      'SELECT resource, token, accepted, newest_token, at_ms FROM lockwarden_fenced_writes WHERE resource = ? ORDER BY id',
    );
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
        if (newest !== undefined && newest > candidate) {
          this.logAttempt.run(resource, token, 0, newest.toString(), Date.now());
          return { accepted: false, newestToken: newest.toString() };
        }
        this.record.run(resource, candidate);
        const value = write(this.db);
        if (value instanceof Promise) throw new TypeError('a SQLite fenced write must be synchronous');
        this.logAttempt.run(resource, token, 1, token, Date.now());
        return { accepted: true, value: value as Awaited<T> };
      })
      .immediate();
  }

  async newestToken(resource: string): Promise<string | null> {
    const newest = this.newest.get(resource) as bigint | undefined;
    return newest === undefined ? null : newest.toString();
  }

  async attempts(resource: string): Promise<FencedWriteAttempt[]> {
    const rows = this.readAttempts.all(resource) as AttemptRow[];
    return rows.map((r) => ({
      resource: r.resource,
      token: r.token,
      accepted: r.accepted === 1,
      newestToken: r.newest_token,
      at: r.at_ms,
    }));
  }
}

function parseToken(token: string): bigint {
  if (!fencingTokenSchema.safeParse(token).success) throw new InvalidFencingTokenError(token);
  return BigInt(token);
}
