// What a lock service stores for one key, read straight from its server: the idle-key tests count it.
import Database from 'better-sqlite3';
import { Etcd3 } from 'etcd3';
import { Client as PgClient } from 'pg';
import { createClient } from 'redis';
import zookeeper from 'node-zookeeper-client';
import { parseZookeeperUrl } from '../../locks/zookeeperUrl';
import { nodeName } from '../../locks/zookeeperLayout';

/**
 * How many records the backend behind `url` keeps that name `key`: rows (SQLite, PostgreSQL), Redis
 * keys and index entries, etcd keys. Read with the server's own client, not through lockwarden, so a
 * record lockwarden stopped reading but still stores is counted.
 */
export async function recordsNaming(url: string, key: string): Promise<number> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true });
    try {
      const count = (table: string) =>
        (db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE key = ?`).get(key) as { n: number }).n;
      return count('lock_leases') + count('lock_waiters');
    } finally {
      db.close();
    }
  }
  if (url.startsWith('postgres')) {
    const client = new PgClient({ connectionString: url });
    await client.connect();
    try {
      const count = async (table: string) =>
        Number((await client.query(`SELECT COUNT(*) AS n FROM ${table} WHERE key = $1`, [key])).rows[0].n);
      return (await count('lockwarden_leases')) + (await count('lockwarden_waiters'));
    } finally {
      await client.end();
    }
  }
  if (url.startsWith('redis')) {
    const client = createClient({ url });
    await client.connect();
    try {
      const perKey = ['lease', 'token', 'waiters', 'waiter-exp', 'waiter-since', 'waiter-owner'];
      const stored = await client.exists(perKey.map((kind) => `lockwarden:${kind}:${key}`));
      const indexed = await Promise.all(
        ['lockwarden:held', 'lockwarden:queued'].map((index) => client.zScore(index, key)),
      );
      return stored + indexed.filter((score) => score !== null).length;
    } finally {
      await client.quit();
    }
  }
  if (url.startsWith('etcd')) {
    const client = new Etcd3({ hosts: url.replace(/^etcd:/, 'http:') });
    try {
      const names = await client.getAll().prefix('lockwarden/').keys();
      const encoded = encodeURIComponent(key);
      // lockwarden/<kind>/<key>[/...], and lockwarden/requester/<requester>/<key>.
      const names_ = names.map((name) => name.split('/'));
      return names_.filter((p) => (p[1] === 'requester' ? p[3] : p[2]) === encoded).length;
    } finally {
      client.close();
    }
  }
  if (url.startsWith('zookeeper')) return zookeeperRecordsNaming(url, key);
  throw new Error(`no record reader for ${url}`);
}

/**
 * ZooKeeper: the key's lock node and its children (leases, and any Curator client's), its queue node
 * and its tickets, and every requester's mark on it.
 */
async function zookeeperRecordsNaming(url: string, key: string): Promise<number> {
  const target = parseZookeeperUrl(url);
  if ('problem' in target) throw new Error(`not a ZooKeeper URL: ${target.problem}`);
  const { connectString, root } = target;
  const client = zookeeper.createClient(connectString);
  await new Promise<void>((resolve) => client.once('connected', () => resolve()).connect());
  const children = (path: string) =>
    new Promise<string[] | null>((resolve, reject) =>
      client.getChildren(path, (error, names) => {
        if (error && (error as { getCode?: () => number }).getCode?.() === zookeeper.Exception.NO_NODE)
          resolve(null);
        else if (error) reject(error);
        else resolve(names);
      }),
    );
  try {
    const name = nodeName(key);
    const node = async (path: string) => {
      const list = await children(path);
      return list === null ? 0 : 1 + list.length;
    };
    const requesters = (await children(`${root}/requesters`)) ?? [];
    const marks = await Promise.all(
      requesters.map(
        async (r) => ((await children(`${root}/requesters/${r}`)) ?? []).filter((k) => k === name).length,
      ),
    );
    return (
      (await node(`${root}/locks/${name}`)) +
      (await node(`${root}/waits/${name}`)) +
      marks.reduce((a, b) => a + b, 0)
    );
  } finally {
    client.close();
  }
}
