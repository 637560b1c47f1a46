// `lockctl status` for a read-only key: a key's holder and waiters as its running sessions say,
// since reading the lock service takes a workflow, which only a key with write permission may start.
import type { Client } from '@temporalio/client';
import { duration, printable, table } from './present';
import { listSessions, type SessionRow } from './sessionList';

/** A key's status from its sessions: what a read-only key can see. */
export interface SessionsStatus {
  key: string;
  /** Always "sessions": read from the sessions' state queries, not from the lock service. */
  source: 'sessions';
  holder: string | null;
  holderSession: string | null;
  waiting: { requester: string; state: string; waitedMs: number | null; session: string }[];
}

const WAITING = new Set(['checking-request', 'acquiring', 'backing-off', 'queued', 'escalated']);

/** Reads the key's running sessions; prints them (or answers JSON when `json`). */
export async function statusFromSessions(
  client: Client,
  key: string,
  uiBaseUrl: string,
  json: boolean,
): Promise<SessionsStatus | undefined> {
  const rows = (await listSessions(client, { key, limit: 1_000 }, uiBaseUrl)).filter(
    (r) => r.status === 'RUNNING',
  );
  const holding = rows.find((r) => r.state === 'holding');
  const waiting = rows
    .filter((r: SessionRow) => WAITING.has(r.state))
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt))
    .map((r) => ({ requester: r.requester, state: r.state, waitedMs: r.waitedMs, session: r.workflowId }));
  const status: SessionsStatus = {
    key,
    source: 'sessions',
    holder: holding?.requester ?? null,
    holderSession: holding?.workflowId ?? null,
    waiting,
  };
  if (json) return status;
  const lines = [
    `${key}: from its sessions (this key may read, not start the workflow that reads the lock service)`,
    holding ? `held by ${holding.requester} (session ${holding.workflowId})` : 'no session holds it',
  ];
  process.stdout.write(lines.map(printable).join('\n') + '\n');
  if (waiting.length === 0) console.log('waiting: none');
  else
    process.stdout.write(
      table(
        ['WAITER', 'STATE', 'WAITED'],
        waiting.map((w) => [w.requester, w.state, w.waitedMs === null ? '?' : duration(w.waitedMs)]),
      ),
    );
  return undefined;
}
