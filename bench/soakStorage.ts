// What a lock service stores, read from its server for the soak: bytes, and what they are made of.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Etcd3 } from 'etcd3';
import { Client as PgClient } from 'pg';
import { createClient } from 'redis';
import { SERVER_URLS } from '../devkit/servers';

export const BACKENDS = ['sqlite', 'redis', 'postgres', 'etcd'] as const;
export type Backend = (typeof BACKENDS)[number];

const ROOT = path.join(__dirname, '..');

/** Starts the dev server and the lock servers (each script is idempotent). */
export function startServers(): void {
  for (const script of ['temporal-server.sh', 'lock-servers.sh'])
    execFileSync('bash', [path.join(ROOT, 'scripts', script), 'start'], { stdio: 'ignore' });
}

export function lockUrlOf(backend: Exclude<Backend, 'sqlite'>): string {
  return SERVER_URLS[backend];
}

/**
 * The bytes the lock service holds for lockwarden and a short account of them: the SQLite pages in
 * use (the file keeps freed pages for reuse); Redis's used memory with its key count; PostgreSQL's lock tables with their indexes and
 * rows; etcd's database in use (after compaction, not the file's high-water mark) with its keys.
 */
export async function storageOf(backend: Backend, url: string): Promise<{ bytes: number; detail: string }> {
  if (backend === 'sqlite') {
    // The pages in use: SQLite reuses a deleted row's page rather than shrink the file.
    const file = url.slice('sqlite:'.length);
    const db = new Database(file, { readonly: true });
    try {
      const pragma = (name: string) => Number(db.pragma(name, { simple: true }));
      const inUse = (pragma('page_count') - pragma('freelist_count')) * pragma('page_size');
      const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
      return { bytes: inUse, detail: `file ${kib(size(file))}, WAL ${kib(size(`${file}-wal`))}` };
    } finally {
      db.close();
    }
  }
  if (backend === 'redis') {
    const client = createClient({ url });
    await client.connect();
    try {
      const memory = Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
      return { bytes: memory, detail: `${await client.dbSize()} keys` };
    } finally {
      await client.quit();
    }
  }
  if (backend === 'postgres') {
    const client = new PgClient({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ bytes: string; leases: string; tickets: string }>(
        `SELECT pg_total_relation_size('lockwarden_leases') + pg_total_relation_size('lockwarden_waiters') AS bytes,
           (SELECT COUNT(*) FROM lockwarden_leases) AS leases, (SELECT COUNT(*) FROM lockwarden_waiters) AS tickets`,
      );
      const row = rows[0]!;
      return { bytes: Number(row.bytes), detail: `${row.leases} key rows, ${row.tickets} tickets` };
    } finally {
      await client.end();
    }
  }
  const client = new Etcd3({ hosts: url.replace(/^etcd:/, 'http:') });
  try {
    const status = await client.maintenance.status();
    // Counted per kind (lease, wait, token, requester: locks/etcdLockService.ts's prefixes), so a
    // count that moves says which records move.
    const kinds = ['lease', 'wait', 'token', 'requester'] as const;
    const counts = await Promise.all(
      kinds.map((kind) => client.getAll().prefix(`lockwarden/${kind}/`).count()),
    );
    const keys = counts.reduce((a, b) => a + b, 0);
    const perKind = kinds.map((kind, i) => `${counts[i]} ${kind}`).join(', ');
    const inUse = Number(status.dbSizeInUse);
    return { bytes: inUse, detail: `${keys} keys (${perKind}), file ${kib(Number(status.dbSize))}` };
  } finally {
    client.close();
  }
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}
