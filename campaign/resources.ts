// The fenced resources the campaign writes through: SQLite and PostgreSQL, and what they recorded.
import Database from 'better-sqlite3';
import type { FencedWriteAttempt } from '../locks/fencedResource';
import { PostgresFencedResource } from '../locks/postgresFencedResource';
import { resilientPool } from '../locks/postgresPool';
import { SqliteFencedResource } from '../locks/sqliteFencedResource';

/** Which fenced resource guards a key: the campaign spreads its keys over both kinds. */
export type ResourceKind = 'sqlite' | 'postgres';
export const resourceKindOf = (key: string): ResourceKind => (key.endsWith('-pg') ? 'postgres' : 'sqlite');

/** Where the campaign's two protected resources live. */
export interface ResourceTargets {
  sqlitePath: string;
  postgresUrl: string;
}

/** One record a session writes under its lease: the application's data the fencing protects. */
export interface CampaignRecord {
  key: string;
  token: string;
  holder: string;
  seq: number;
}

/** The campaign's protected resources, opened: each write is fenced by the key's token. */
export async function openResources(targets: ResourceTargets) {
  const db = new Database(targets.sqlitePath, { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE IF NOT EXISTS campaign_records (key TEXT, token TEXT, holder TEXT, seq INTEGER)');
  const sqlite = new SqliteFencedResource(db);
  const insertSqlite = db.prepare(
    'INSERT INTO campaign_records (key, token, holder, seq) VALUES (?, ?, ?, ?)',
  );
  const pool = resilientPool({ connectionString: targets.postgresUrl, max: 4 });
  const postgres = await PostgresFencedResource.open(pool);
  await pool.query(
    'CREATE TABLE IF NOT EXISTS campaign_records (key text, token numeric, holder text, seq integer)',
  );
  return {
    async write(record: CampaignRecord) {
      if (resourceKindOf(record.key) === 'sqlite')
        return sqlite.write(record.key, record.token, () =>
          insertSqlite.run(record.key, record.token, record.holder, record.seq),
        );
      return postgres.write(record.key, record.token, (tx) =>
        tx.query('INSERT INTO campaign_records (key, token, holder, seq) VALUES ($1, $2, $3, $4)', [
          record.key,
          record.token,
          record.holder,
          record.seq,
        ]),
      );
    },
    /** The application's rows for `key`: what the accepted writes left in the resource's own table. */
    async records(key: string): Promise<Omit<CampaignRecord, 'key'>[]> {
      if (resourceKindOf(key) === 'sqlite')
        return db
          .prepare('SELECT token, holder, seq FROM campaign_records WHERE key = ? ORDER BY rowid')
          .all(key) as Omit<CampaignRecord, 'key'>[];
      const { rows } = await pool.query<Omit<CampaignRecord, 'key'>>(
        'SELECT token::text AS token, holder, seq FROM campaign_records WHERE key = $1',
        [key],
      );
      return rows;
    },
    /** Every write attempted on `key`'s resource, in commit order. */
    attempts(key: string): Promise<FencedWriteAttempt[]> {
      return resourceKindOf(key) === 'sqlite' ? sqlite.attempts(key) : postgres.attempts(key);
    },
    async close() {
      db.close();
      await pool.end();
    },
  };
}
export type CampaignResources = Awaited<ReturnType<typeof openResources>>;
