// `lockwarden/testing`: what a user's own tests need to run workflows that take locks: a lock
// service on a temporary SQLite file, gone when disposed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteLockService } from '../locks/sqliteLockService';

/** A lock service of its own for one test, and the URL a worker process would open it with. */
export interface TemporaryLockService {
  locks: SqliteLockService;
  url: string;
  /** Closes the service and removes its file. */
  dispose(): Promise<void>;
}

/** Opens an embedded lock service on a fresh temporary SQLite file. */
export function temporaryLockService(): TemporaryLockService {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-test-'));
  const file = path.join(dir, 'locks.sqlite');
  const locks = new SqliteLockService({ path: file });
  return {
    locks,
    url: `sqlite:${file}`,
    async dispose() {
      await locks.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
