import Database from 'better-sqlite3';
import { Pool, type PoolClient } from 'pg';
import { type FencedResource, InvalidFencingTokenError } from '../locks/fencedResource';
import { PostgresFencedResource } from '../locks/postgresFencedResource';
import { SqliteFencedResource } from '../locks/sqliteFencedResource';
import { SERVER_URLS } from './support/lockBackends';
import { freshSqlitePath, unique } from '../devkit/tempFiles';

interface Harness {
  name: string;
  resource: FencedResource<unknown>;
  /** A write that records `batch` in the application's own table, inside the fenced transaction. */
  recordBatch(resource: string, batch: string): (tx: unknown) => unknown;
  /** A write that fails after writing, to show the token is not recorded when the write rolls back. */
  failingWrite(resource: string): (tx: unknown) => unknown;
  batches(resource: string): Promise<string[]>;
  close(): Promise<void>;
}

async function sqliteHarness(): Promise<Harness> {
  const db = new Database(freshSqlitePath());
  db.exec('CREATE TABLE invoice_batches (resource TEXT, batch TEXT)');
  const insert = db.prepare('INSERT INTO invoice_batches VALUES (?, ?)');
  return {
    name: 'sqlite',
    resource: new SqliteFencedResource(db) as FencedResource<unknown>,
    recordBatch: (resource, batch) => () => insert.run(resource, batch),
    failingWrite: (resource) => () => {
      insert.run(resource, 'half-written');
      throw new Error('export crashed mid-write');
    },
    batches: async (resource) =>
      (
        db.prepare('SELECT batch FROM invoice_batches WHERE resource = ?').pluck().all(resource) as string[]
      ).sort(),
    close: async () => {
      db.close();
    },
  };
}

async function postgresHarness(): Promise<Harness> {
  const pool = new Pool({ connectionString: SERVER_URLS.postgres, max: 2 });
  await pool.query('CREATE TABLE IF NOT EXISTS test_invoice_batches (resource text, batch text)');
  const insert = (tx: unknown, resource: string, batch: string) =>
    (tx as PoolClient).query('INSERT INTO test_invoice_batches VALUES ($1, $2)', [resource, batch]);
  return {
    name: 'postgres',
    resource: (await PostgresFencedResource.open(pool)) as FencedResource<unknown>,
    recordBatch: (resource, batch) => (tx) => insert(tx, resource, batch),
    failingWrite: (resource) => async (tx) => {
      await insert(tx, resource, 'half-written');
      throw new Error('export crashed mid-write');
    },
    batches: async (resource) => {
      const { rows } = await pool.query<{ batch: string }>(
        'SELECT batch FROM test_invoice_batches WHERE resource = $1',
        [resource],
      );
      return rows.map((r) => r.batch).sort();
    },
    close: () => pool.end(),
  };
}

describe.each([
  ['sqlite', sqliteHarness],
  ['postgres', postgresHarness],
])('FencedResource on %s', (name, open) => {
  let h: Harness;
  let resource: string;
  beforeAll(async () => {
    h = await open();
  });
  afterAll(() => h.close());
  beforeEach(() => {
    resource = unique('nightly-export');
  });

  it(`[${name}] accepts writes with rising or equal tokens and refuses an older one`, async () => {
    expect(await h.resource.write(resource, '7', h.recordBatch(resource, 'A1'))).toMatchObject({
      accepted: true,
    });
    expect(await h.resource.write(resource, '8', h.recordBatch(resource, 'B1'))).toMatchObject({
      accepted: true,
    });
    expect(await h.resource.write(resource, '8', h.recordBatch(resource, 'B2'))).toMatchObject({
      accepted: true,
    });
    expect(await h.resource.write(resource, '7', h.recordBatch(resource, 'A2'))).toEqual({
      accepted: false,
      newestToken: '8',
    });
    expect(await h.batches(resource)).toEqual(['A1', 'B1', 'B2']);
    expect(await h.resource.newestToken(resource)).toBe('8');
  });

  it(`[${name}] compares tokens as integers, not as text`, async () => {
    await h.resource.write(resource, '10', h.recordBatch(resource, 'ten'));
    expect(await h.resource.write(resource, '9', h.recordBatch(resource, 'nine'))).toMatchObject({
      accepted: false,
    });
  });

  it(`[${name}] records nothing, not even the token, when the protected write fails`, async () => {
    await h.resource.write(resource, '3', h.recordBatch(resource, 'first'));
    await expect(h.resource.write(resource, '4', h.failingWrite(resource))).rejects.toThrow(
      'export crashed mid-write',
    );
    expect(await h.resource.newestToken(resource)).toBe('3');
    expect(await h.batches(resource)).toEqual(['first']);
  });

  it.each(['', '-1', '0', '1.5', 'abc', '12 '])(
    `[${name}] refuses %j as a fencing token before writing`,
    async (token) => {
      await expect(h.resource.write(resource, token, h.recordBatch(resource, 'x'))).rejects.toThrow(
        InvalidFencingTokenError,
      );
      expect(await h.batches(resource)).toEqual([]);
    },
  );
});
