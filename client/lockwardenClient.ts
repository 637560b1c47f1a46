import { type Client, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/client';
import { type AcquireOutcome, type AcquireRequestInput, parseAcquireRequest } from '../policy/acquireRequest';
import { DEFAULT_TASK_QUEUE, SEARCH_ATTRIBUTES } from '../policy/constants';
import type { FencedActionResult, Lease } from '../policy/lockSchemas';
import type { acquireLock, releaseLock } from '../workflows';

/** Where sessions run and how their UI links are written. */
export interface SessionPlacement {
  taskQueue?: string;
  /** Base URL of the Temporal Web UI, for the links printed to users. */
  uiBaseUrl?: string;
}

/** A started acquisition session: its ids, its UI link, and a way to wait for its outcome. */
export interface StartedAcquisition {
  workflowId: string;
  runId: string;
  uiUrl: string;
  result(): Promise<AcquireOutcome>;
}

/** The workflow id of the session of one requester on one key: at most one runs at a time. */
export function acquisitionWorkflowId(key: string, requester: string): string {
  return `lock/${key}/${requester}`;
}

/** The Temporal Web UI address of a workflow run. */
export function workflowUiUrl(
  uiBaseUrl: string,
  namespace: string,
  workflowId: string,
  runId: string,
): string {
  return `${uiBaseUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}/${runId}/history`;
}

/**
 * Starts an acquisition session on the caller's task queue. The request is validated here first, so
 * a bad one fails before anything reaches Temporal (the workflow validates it again).
 */
export async function startAcquisition(
  client: Client,
  input: AcquireRequestInput,
  placement: SessionPlacement = {},
): Promise<StartedAcquisition> {
  const request = parseAcquireRequest(input);
  const workflowId = acquisitionWorkflowId(request.key, request.requester);
  const handle = await client.workflow.start<typeof acquireLock>('acquireLock', {
    taskQueue: placement.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId,
    args: [request],
    // A second session for the same requester and key while one runs is a caller bug: refuse it.
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    staticSummary: `acquire ${request.key} for ${request.requester}`,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.lockKey, value: request.key },
      { key: SEARCH_ATTRIBUTES.lockRequester, value: request.requester },
      { key: SEARCH_ATTRIBUTES.lockState, value: 'acquiring' },
    ],
  });
  return {
    workflowId,
    runId: handle.firstExecutionRunId,
    uiUrl: workflowUiUrl(
      placement.uiBaseUrl ?? 'http://localhost:8233',
      client.options.namespace,
      workflowId,
      handle.firstExecutionRunId,
    ),
    result: () => handle.result(),
  };
}

/** Releases a lease through a short `releaseLock` workflow; fenced by the lease's token. */
export async function releaseLease(
  client: Client,
  lease: Pick<Lease, 'key' | 'holder' | 'token'>,
  placement: SessionPlacement = {},
): Promise<FencedActionResult> {
  return client.workflow.execute<typeof releaseLock>('releaseLock', {
    taskQueue: placement.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId: `release/${lease.key}/${lease.holder}/${lease.token}`,
    args: [{ key: lease.key, holder: lease.holder, token: lease.token }],
    staticSummary: `release ${lease.key} token ${lease.token}`,
  });
}
