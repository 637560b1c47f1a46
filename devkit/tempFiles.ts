// Temporary names and files for tests and benches: fresh SQLite paths, unique ids.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';

/** A path for a new SQLite database in the temporary directory. */
export function freshSqlitePath(): string {
  return path.join(os.tmpdir(), `lockwarden-test-${randomUUID()}.sqlite`);
}

/** A name no other test uses, for task queues, workflow ids, keys and requesters. */
export function unique(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
