// `lockctl list`: sessions from Temporal's visibility, with each one's state.
import { visibilityLiteral } from '../temporal/visibility';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { z } from 'zod';
import { describeIssues, InvalidLockRequestError } from '../policy/errors';
import { holderSchema, lockKeySchema } from '../policy/lockContract/lockSchemas';
import { mapConcurrently } from './concurrency';
import {
  isSessionState,
  SESSION_PHASES,
  type SessionOutcome,
  type SessionState,
} from '../policy/sessionModel/sessionTypes';
import { sessionState } from '../temporal/messages';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';
import { workflowUiUrl } from './lockwardenClient';

/** Which sessions to list: by key, state and requester, newest first, at most `limit`. */
const sessionFilterSchema = z.strictObject({
  key: lockKeySchema.optional(),
  state: z.enum(SESSION_PHASES).optional(),
  requester: holderSchema.optional(),
  limit: z.number().int().min(1).max(1_000).default(50),
});
type SessionFilter = z.input<typeof sessionFilterSchema>;

/** One session as `lockctl list` shows it. */
export interface SessionRow {
  workflowId: string;
  runId: string;
  key: string;
  requester: string;
  /** A running session's own phase (its state query), else its LockState search attribute. */
  state: string;
  /** Temporal's view: RUNNING, COMPLETED, FAILED, TERMINATED... */
  status: string;
  startedAt: string;
  attempts: number | null;
  waitedMs: number | null;
  /** Who holds the key as the session last saw it (itself, while it holds). */
  holder: string | null;
  /** The owner it waits and holds for in the wait-for graph, when one is declared or set by withLock. */
  owner: string | null;
  uiUrl: string;
}

/** How long one session's state query may take before its row is shown without it. */
const STATE_QUERY_TIMEOUT_MS = 3_000;
/** State queries in flight at once. */
const QUERY_CONCURRENCY = 8;

/**
 * Lists sessions from Temporal's visibility (the LockKey, LockRequester and LockState search
 * attributes), each with its state query's attempts, wait and holder where its worker answers.
 */
export async function listSessions(
  client: Client,
  input: SessionFilter,
  uiBaseUrl: string,
): Promise<SessionRow[]> {
  const parsed = sessionFilterSchema.safeParse(input);
  if (!parsed.success) throw new InvalidLockRequestError('list filter', describeIssues(parsed.error));
  const filter = parsed.data;
  const executions: WorkflowExecutionInfo[] = [];
  for await (const execution of client.workflow.list({ query: visibilityQuery(filter) })) {
    // The query narrows; this exact comparison decides (see visibilityQuery).
    if (!matches(execution, filter)) continue;
    executions.push(execution);
    if (executions.length >= filter.limit) break;
  }
  const namespace = client.options.namespace;
  return mapConcurrently(executions, QUERY_CONCURRENCY, async (execution) => {
    const row = {
      workflowId: execution.workflowId,
      runId: execution.runId,
      key: attribute(execution, 'lockKey') ?? '',
      requester: attribute(execution, 'lockRequester') ?? '',
      state: attribute(execution, 'lockState') ?? 'unknown',
      status: execution.status.name,
      startedAt: execution.startTime.toISOString(),
      uiUrl: workflowUiUrl(uiBaseUrl, namespace, execution.workflowId, execution.runId),
    };
    if (execution.status.name !== 'RUNNING') {
      // A closed session's outcome is in its history: no worker needed to read it.
      const outcome = await outcomeOf(client, execution);
      const waited = outcome?.status === 'abandoned' ? outcome.waitedMs : null;
      return { ...row, attempts: outcome?.attempts ?? null, waitedMs: waited, holder: null, owner: null };
    }
    const state = await queryState(client, execution);
    return {
      ...row,
      state: state?.phase ?? row.state,
      attempts: state?.attempts ?? null,
      waitedMs: state ? waitedMs(state) : null,
      holder: state?.holder ?? null,
      owner: state?.owner ?? null,
    };
  });
}

/**
 * The visibility query. A value goes into it only in a form every visibility store reads exactly
 * (quotes doubled inside, none at either end, no `?` or backslash); any other value is matched on
 * the client side alone.
 */
function visibilityQuery(filter: z.output<typeof sessionFilterSchema>): string {
  const clauses = [`WorkflowType = 'acquireLock'`];
  const add = (name: string, value: string | undefined) => {
    const literal = value === undefined ? null : visibilityLiteral(value);
    if (literal) clauses.push(`${name} = ${literal}`);
  };
  add('LockKey', filter.key);
  add('LockRequester', filter.requester);
  add('LockState', filter.state);
  return clauses.join(' AND ');
}

// A running session that still waits has waited until now; one that holds, as its state says.
function waitedMs(state: SessionState): number {
  return WAITING_PHASES.has(state.phase)
    ? Math.max(state.waitedMs, Date.now() - state.waitingSince)
    : state.waitedMs;
}
const WAITING_PHASES = new Set<string>(['acquiring', 'backing-off', 'queued', 'escalated']);

function matches(execution: WorkflowExecutionInfo, filter: z.output<typeof sessionFilterSchema>): boolean {
  if (filter.key !== undefined && attribute(execution, 'lockKey') !== filter.key) return false;
  if (filter.requester !== undefined && attribute(execution, 'lockRequester') !== filter.requester)
    return false;
  if (filter.state !== undefined && attribute(execution, 'lockState') !== filter.state) return false;
  return true;
}

function attribute(
  execution: WorkflowExecutionInfo,
  name: 'lockKey' | 'lockRequester' | 'lockState',
): string | undefined {
  return execution.typedSearchAttributes.get(SEARCH_ATTRIBUTES[name]);
}

// The session's state, or null when its worker does not answer in time (the row still shows).
async function queryState(client: Client, execution: WorkflowExecutionInfo): Promise<SessionState | null> {
  try {
    const answer = await client.withDeadline(Date.now() + STATE_QUERY_TIMEOUT_MS, () =>
      client.workflow.getHandle(execution.workflowId, execution.runId).query(sessionState),
    );
    // A session still checking its request has no state yet: its row shows what visibility knows.
    return isSessionState(answer) ? answer : null;
  } catch {
    return null;
  }
}

// How a closed run ended, or null when it did not end with an outcome (failed, terminated, continued).
async function outcomeOf(client: Client, execution: WorkflowExecutionInfo): Promise<SessionOutcome | null> {
  try {
    return await client.workflow
      .getHandle(execution.workflowId, execution.runId, { followRuns: false })
      .result();
  } catch {
    return null;
  }
}
