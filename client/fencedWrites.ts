// Reading a fenced resource's write attempts for a post-mortem.
import Database from 'better-sqlite3';
import type { FencedWriteAttempt } from '../locks/fencedResource';
import { PostgresFencedResource } from '../locks/postgresFencedResource';
import { SqliteFencedResource } from '../locks/sqliteFencedResource';
import { withDriver } from '../locks/optionalDrivers';
import { InvalidLockRequestError } from '../policy/errors';

/**
 * Reads the write attempts a fenced resource recorded, for a post-mortem: `sqlite:<file>` (opened
 * read-only) or a `postgres://` URL of the application's database.
 */
export async function readFencedWrites(url: string, resource: string): Promise<FencedWriteAttempt[]> {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length);
    let db: Database.Database;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true });
    } catch (error) {
      throw new InvalidLockRequestError('--fenced', [`cannot open ${file} (${(error as Error).message})`]);
    }
    try {
      return await new SqliteFencedResource(db).attempts(resource);
    } finally {
      db.close();
    }
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { Pool } = await withDriver('pg', '--fenced postgres://', () => import('pg'));
    const pool = new Pool({ connectionString: url, max: 1 });
    try {
      return await (await PostgresFencedResource.open(pool)).attempts(resource);
    } finally {
      await pool.end();
    }
  }
  throw new InvalidLockRequestError('--fenced', ['must be sqlite:<file> or a postgres:// URL']);
}
