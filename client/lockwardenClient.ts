// The programmatic client: acquire, release, withLease, state, status, force-release, resolve.
import { inSpan } from '../temporal/spans';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  type Client,
  TimeoutFailure,
  type WorkflowHandle,
  WithStartWorkflowOperation,
  WorkflowFailedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowUpdateStage,
} from '@temporalio/client';
import { ApplicationFailure, type WorkerDeploymentVersion, WorkflowNotFoundError } from '@temporalio/common';
import {
  type AcquireRequest,
  type AcquireRequestInput,
  parseAcquireRequest,
} from '../policy/decisions/acquireRequest';
import {
  acquisitionWorkflowId,
  DEFAULT_TASK_QUEUE,
  DEFAULT_UI_URL,
  releaseWorkflowId,
} from '../policy/constants';
import {
  FAILURE_TYPES,
  LeaseActionDeniedError,
  LockNotAcquiredError,
  SessionNotYetStartedError,
} from '../policy/errors';
import { RELEASE_KEY_MEMO, releaseKeyDigest } from '../policy/lockContract/releaseKey';
import {
  type FencedActionResult,
  forceReleaseSchema,
  type Lease,
  leaseNamesSchema,
  lockKeySchema,
  parseOrThrow,
} from '../policy/lockContract/lockSchemas';
import type { LockStatus } from '../policy/lockContract/keyStatus';
import {
  isSessionState,
  type LeaseAnswer,
  type OperatorDecision,
  type OperatorDecisionInput,
  type ReleaseAnswer,
  type SessionNews,
  type SessionOutcome,
  type SessionState,
} from '../policy/sessionModel/sessionTypes';
import { operatorDecisionSchema } from '../policy/decisions/operatorAnswer';
import { DEFAULT_HOLDER_TTL_MS } from '../policy/decisions/holdLimits';
import { type HolderKeepAlive, keepHolderAlive } from './holderKeepAlive';
import { isBusyFrontend, sendPatiently } from './patientUpdate';
import { awaitLease, releaseLease, resolveEscalation, sessionState } from '../temporal/messages';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';
import type { acquireLock, lockStatus, releaseLock } from '../workflows';

export { acquisitionWorkflowId };

/** Where sessions run and how their UI links are written. */
export interface SessionPlacement {
  taskQueue?: string;
  /** Base URL of the Temporal Web UI, for the links printed to users. */
  uiBaseUrl?: string;
  /**
   * Pin the session to this Worker Deployment Version, whatever version is current: how new sessions
   * reach a versioned release while unversioned workers finish their own (docs/versioning.md).
   */
  pinTo?: WorkerDeploymentVersion;
}

/** A started acquisition session: its ids, its UI link, and a way to wait for its final outcome. */
export interface StartedAcquisition {
  workflowId: string;
  runId: string;
  uiUrl: string;
  /**
   * The capability to release this session's lease: made here, kept in this process (release() finds
   * it), never sent to Temporal before the release uses it. Hand it to another process only to let
   * that process release (lockctl prints it for `lockctl release --release-key`).
   */
  releaseKey: string;
  result(): Promise<SessionOutcome>;
}

/**
 * The release keys of the sessions this process started, by session id: the process that acquired
 * holds the capability, as Redisson's lock belongs to its thread. Kept after a release (a second one
 * answers not-holding), the oldest forgotten past MAX_REMEMBERED_KEYS.
 */
const releaseKeys = new Map<string, string>();

/** The most release keys a process remembers; the oldest go first. */
const MAX_REMEMBERED_KEYS = 10_000;

/** A fresh release key (32 random bytes), and the start's memo that carries only its digest. */
function newReleaseKey(): { releaseKey: string; memo: Record<string, string> } {
  const releaseKey = randomBytes(32).toString('base64url');
  return { releaseKey, memo: { [RELEASE_KEY_MEMO]: releaseKeyDigest(releaseKey) } };
}

/** Remembers the release key of a session this process started (once its start took). */
function remember(workflowId: string, releaseKey: string): void {
  releaseKeys.delete(workflowId);
  releaseKeys.set(workflowId, releaseKey);
  if (releaseKeys.size > MAX_REMEMBERED_KEYS) releaseKeys.delete(releaseKeys.keys().next().value!);
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

/** How a session is started (id, queue, search attributes, summary), whichever call starts it. */
function sessionStartOptions(request: AcquireRequest, placement: SessionPlacement) {
  return {
    taskQueue: placement.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId: acquisitionWorkflowId(request.key, request.requester),
    args: [request] as [AcquireRequest],
    // A second session for the same requester and key while one runs is a caller bug: refuse it.
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    staticSummary: `acquire ${request.key} for ${request.requester}${request.owner ? ` (owner ${request.owner})` : ''}`,
    ...(placement.pinTo ? { versioningOverride: { pinnedTo: placement.pinTo } } : {}),
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.lockKey, value: request.key },
      { key: SEARCH_ATTRIBUTES.lockRequester, value: request.requester },
      { key: SEARCH_ATTRIBUTES.lockState, value: 'acquiring' },
    ],
  };
}

function startedAcquisition(
  client: Client,
  workflowId: string,
  firstRunId: string,
  placement: SessionPlacement,
  releaseKey: string,
): StartedAcquisition {
  const handle = client.workflow.getHandle<typeof acquireLock>(workflowId, undefined, {
    firstExecutionRunId: firstRunId,
  });
  return {
    workflowId,
    runId: firstRunId,
    uiUrl: workflowUiUrl(
      placement.uiBaseUrl ?? DEFAULT_UI_URL,
      client.options.namespace,
      workflowId,
      firstRunId,
    ),
    releaseKey,
    result: () => handle.result(),
  };
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
  const { releaseKey, memo } = newReleaseKey();
  const handle = await client.workflow.start<typeof acquireLock>('acquireLock', {
    ...sessionStartOptions(request, placement),
    memo,
  });
  remember(handle.workflowId, releaseKey);
  return startedAcquisition(client, handle.workflowId, handle.firstExecutionRunId, placement, releaseKey);
}

/** A session started together with its caller's wait for the lease. */
export interface AwaitedAcquisition {
  session: StartedAcquisition;
  /** The lease, or how the session ended without one. */
  news: Promise<SessionNews>;
}

/**
 * Starts a session and its wait for the lease in one call (update-with-start): the wait rides in the
 * session's first workflow task instead of following the start as a second request. Resolves once
 * the session has taken the wait, with `news` to be answered when it holds the lease or ends. An
 * uncontended session answers in that same first task, so the one call brings the lease too.
 */
export async function startAwaitingLease(
  client: Client,
  input: AcquireRequestInput,
  placement: SessionPlacement = {},
): Promise<AwaitedAcquisition> {
  const request = parseAcquireRequest(input);
  const { releaseKey, memo } = newReleaseKey();
  const start = new WithStartWorkflowOperation<typeof acquireLock>('acquireLock', {
    ...sessionStartOptions(request, placement),
    memo,
  });
  const wait = await client.workflow
    .startUpdateWithStart(awaitLease, {
      waitForStage: WorkflowUpdateStage.ACCEPTED,
      startWorkflowOperation: start,
    })
    .catch((error: unknown) => askAgainIfStarted(start, error));
  const workflowId = acquisitionWorkflowId(request.key, request.requester);
  const firstRunId = wait?.workflowRunId ?? (await firstRunOf(await start.workflowHandle()));
  remember(workflowId, releaseKey);
  const first = wait?.result().catch((error: unknown) => askAgainIfStarted(start, error));
  return {
    session: startedAcquisition(client, workflowId, firstRunId, placement, releaseKey),
    news: followNews(client, workflowId, first),
  };
}

/** A lease held by this process, kept alive while the process lives (see {@link acquire}). */
export interface HeldLease {
  lease: Lease;
  session: StartedAcquisition;
  /**
   * Aborted, with a LeaseLostError, once the session is found to hold the lease no more (the hold
   * limit, keep-alives that did not reach it in time): stop the work it protects. Pass it on to
   * whatever takes an AbortSignal.
   */
  signal: AbortSignal;
}

/** The keep-alives this process sends, by session id, until the lease is released. */
const keepAlives = new Map<string, HolderKeepAlive>();

/**
 * Starts a session and waits until it holds the lease; the session then keeps the lease renewed
 * until `release`, for as long as this process lives: the process sends keep-alives (every third of
 * the request's `holderTtlMs`, DEFAULT_HOLDER_TTL_MS unless set), and a session that goes
 * `holderTtlMs` without one (the process died, or hung) lets the lease go, fenced. For a hold that
 * outlives its process, start a session with `startAcquisition` instead (bounded by its hold limit).
 * Throws LockNotAcquired (with the session's outcome) when it ends without one.
 */
export async function acquire(
  client: Client,
  input: AcquireRequestInput,
  placement: SessionPlacement = {},
): Promise<HeldLease> {
  const request = { ...input, holderTtlMs: input.holderTtlMs ?? DEFAULT_HOLDER_TTL_MS };
  // The root of the acquisition's trace when the caller's client carries Temporal's OpenTelemetry
  // plugin and a tracer provider is registered (temporal/tracing.ts); a no-op otherwise.
  const attributes = {
    'lockwarden.session_id': acquisitionWorkflowId(String(input.key), String(input.requester)),
    'lockwarden.key': String(input.key),
    'lockwarden.requester': String(input.requester),
  };
  return inSpan('lockwarden.acquire', attributes, async (span) => {
    const { session, news } = await startAwaitingLease(client, request, placement);
    const answer = await news;
    span.setAttribute('lockwarden.outcome', answer.status === 'ended' ? answer.outcome.status : 'held');
    if (answer.status === 'ended') throw new LockNotAcquiredError(input.key, answer.outcome);
    span.setAttribute('lockwarden.token', answer.lease.token);
    const kept = keepHolderAlive(client, session.workflowId, answer.lease, request.holderTtlMs);
    keepAlives.get(session.workflowId)?.stop();
    keepAlives.set(session.workflowId, kept);
    return { lease: answer.lease, session, signal: kept.signal };
  });
}

/** The first run of a session whose start answered without its wait's (rare: an RPC timed out). */
async function firstRunOf(handle: WorkflowHandle<typeof acquireLock>): Promise<string> {
  const described = await handle.describe();
  return described.raw.workflowExecutionInfo?.firstRunId ?? described.runId;
}

/**
 * A wait sent with its session's start is asked again, as `awaitLeaseOf` asks, when the session did
 * start but the wait had no answer: its RPC ran out of time (a worker too busy to take the session's
 * first workflow task in time), the frontend had too many callers waiting, or the run closed under
 * it. Any other failure is the caller's to see, as is a start that did not take.
 */
async function askAgainIfStarted(
  start: WithStartWorkflowOperation<typeof acquireLock>,
  error: unknown,
): Promise<undefined> {
  const unanswered =
    error instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
    error instanceof WorkflowNotFoundError ||
    isBusyFrontend(error);
  if (!unanswered) throw error;
  await start.workflowHandle();
  return undefined;
}

/**
 * The session's news from the wait that came with its start; when that wait had no answer (it is
 * to be asked again, or the run continued as new), the latest run is asked as any caller would.
 */
async function followNews(
  client: Client,
  workflowId: string,
  first: LeaseAnswer | undefined | Promise<LeaseAnswer | undefined>,
): Promise<SessionNews> {
  const answer = await first;
  return answer && answer.status !== 'continued-as-new' ? answer : awaitLeaseOf(client, workflowId);
}

/**
 * Runs `fn` while holding a lock, from code outside a workflow: acquires (waiting as `acquire` does,
 * this process keeping the lease alive meanwhile), hands `fn` the lease (pass its token to the
 * resource's FencedResource) and the signal that aborts if the lease is lost, and releases after `fn`
 * returns or throws. Throws LockNotAcquired when the session ends without the lease.
 */
export async function withLease<T>(
  client: Client,
  input: AcquireRequestInput,
  fn: (lease: Lease, signal: AbortSignal) => Promise<T>,
  placement: SessionPlacement = {},
): Promise<T> {
  const { lease, session, signal } = await acquire(client, input, placement);
  try {
    return await fn(lease, signal);
  } finally {
    await release(client, lease, { releaseKey: session.releaseKey });
  }
}

/**
 * Sends `update` to a session's latest run; when that run has closed (an update cannot reach it),
 * answers with the session's outcome instead. A session that never existed, failed or was terminated
 * throws as its result does.
 */
async function unlessEnded<T>(
  handle: WorkflowHandle<typeof acquireLock>,
  update: () => Promise<T>,
): Promise<T | { status: 'ended-before-asked'; outcome: SessionOutcome }> {
  try {
    return await update();
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    return { status: 'ended-before-asked', outcome: await handle.result() };
  }
}

/** How many runs a call follows when the session keeps continuing as new under it. */
const MAX_RUNS_FOLLOWED = 100;

/**
 * Waits until the session `workflowId` holds its lease or has ended, following it across
 * continue-as-new: a run that continues answers so, and the update goes to the latest run. A session
 * that ended before it was asked answers with its outcome (an update cannot reach a closed run); one
 * that failed or was terminated throws as its result does.
 */
export async function awaitLeaseOf(client: Client, workflowId: string): Promise<SessionNews> {
  const handle = client.workflow.getHandle<typeof acquireLock>(workflowId); // no run id: the latest run
  for (let run = 0; run < MAX_RUNS_FOLLOWED; run++) {
    const answer = await unlessEnded(handle, () =>
      sendPatiently((updateId) => handle.executeUpdate(awaitLease, { updateId })),
    );
    if (answer.status === 'ended-before-asked') return { status: 'ended', outcome: answer.outcome };
    if (answer.status !== 'continued-as-new') return answer;
  }
  throw new Error(`session ${workflowId} continued as new ${MAX_RUNS_FOLLOWED} times while awaited`);
}

/**
 * Asks the holding session to release its lease (fenced by its token) and returns the service's
 * answer. Only the acquirer may: the release key is the one this process was given when it started
 * the session (found by itself), or one passed in `releaseKey`. Throws LeaseActionDenied when the
 * session refuses it (another's lease, no key, a wrong key): an operator takes a lease away with
 * forceRelease instead.
 */
export async function release(
  client: Client,
  lease: Pick<Lease, 'key' | 'holder'>,
  options: { releaseKey?: string } = {},
): Promise<ReleaseAnswer> {
  const names = parseOrThrow(leaseNamesSchema, { key: lease.key, holder: lease.holder }, 'release request');
  const sessionId = acquisitionWorkflowId(names.key, names.holder);
  const releaseKey = options.releaseKey ?? releaseKeys.get(sessionId);
  if (releaseKey === undefined)
    throw new LeaseActionDeniedError(
      `release of ${names.key} for ${names.holder} refused: no release key (the one its acquirer was given, e.g. lockctl release --release-key); an operator takes a lease away with force-release`,
    );
  const answer = await releaseSession(client, sessionId, names, releaseKey);
  // Answered (released, or nothing left to release): this process keeps nothing alive any more. A
  // release refused or not answered throws first, and the keep-alives go on.
  keepAlives.get(sessionId)?.stop();
  keepAlives.delete(sessionId);
  return answer;
}

async function releaseSession(
  client: Client,
  sessionId: string,
  owner: { key: string; holder: string },
  releaseKey: string,
): Promise<ReleaseAnswer> {
  const handle = client.workflow.getHandle<typeof acquireLock>(sessionId);
  for (let run = 0; run < MAX_RUNS_FOLLOWED; run++) {
    const answer = await unlessEnded(handle, () =>
      sendPatiently((updateId) =>
        handle.executeUpdate(releaseLease, { args: [owner, releaseKey], updateId }),
      ),
    ).catch(refusedAsDenied);
    // A session that ended (its lease lost, or released already) holds nothing to release.
    if ('status' in answer) return { ok: false, reason: 'not-holding' };
    if (answer.ok || answer.reason !== 'continued-as-new') return answer;
  }
  throw new Error(`session of ${owner.holder} on ${owner.key} continued as new ${MAX_RUNS_FOLLOWED} times`);
}

// The session's refusal of a release (its validator's typed failure) as the client's typed error.
function refusedAsDenied(error: unknown): never {
  const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
  if (cause instanceof ApplicationFailure && cause.type === FAILURE_TYPES.leaseActionDenied)
    throw new LeaseActionDeniedError(cause.message);
  throw error;
}

/**
 * Answers an escalated session: retry with more budget, or abandon. Validated before it is sent, and
 * again by the session, which refuses an answer it cannot take (it is not escalated, or was answered
 * already) with a WorkflowUpdateFailedError whose cause says why. Resolves to the answer as applied.
 */
export async function resolve(
  client: Client,
  workflowId: string,
  decision: OperatorDecisionInput,
): Promise<OperatorDecision> {
  operatorDecisionSchema.parse(decision);
  return client.workflow.getHandle(workflowId).executeUpdate(resolveEscalation, { args: [decision] });
}

/** How long `stateOf` asks again while a just-started session is still checking its request. */
const STATE_WHILE_CHECKING_MS = 5_000;

/**
 * A session's current state (attempts, decisions, holder, budget left, escalation). A session
 * answers its first moments (its request's check, one local activity) with `checking-request`: this
 * asks again every 20 ms, for at most STATE_WHILE_CHECKING_MS, then throws SessionNotYetStartedError.
 */
export async function stateOf(client: Client, workflowId: string): Promise<SessionState> {
  const handle = client.workflow.getHandle(workflowId);
  const until = Date.now() + STATE_WHILE_CHECKING_MS;
  for (;;) {
    const answer = await handle.query(sessionState);
    if (isSessionState(answer)) return answer;
    if (Date.now() >= until) throw new SessionNotYetStartedError(workflowId);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * An operator takes a lease away from its holder: a short `releaseLock` workflow releases it, fenced
 * by its token (a stale token changes nothing), and logs and counts it with `reason`, which is
 * required. For a lease whose holder is gone or stuck; a holder releases its own with `release`.
 */
export async function forceRelease(
  client: Client,
  lease: Pick<Lease, 'key' | 'holder' | 'token'>,
  options: { reason: string },
  placement: SessionPlacement = {},
): Promise<FencedActionResult> {
  const { key, holder, token } = lease;
  const target = parseOrThrow(
    forceReleaseSchema,
    { key, holder, token, reason: options?.reason },
    'force-release request',
  );
  return client.workflow.execute<typeof releaseLock>('releaseLock', {
    taskQueue: placement.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId: releaseWorkflowId(target.key, target.holder, target.token),
    args: [target],
    staticSummary: `force-release ${target.key} token ${target.token}`,
  });
}

/**
 * A key's holder, token, lease time left and queue, read from the lock service on its clock by a short
 * `lockStatus` workflow whose activity runs on the worker: the caller needs no lock-service access.
 */
export async function statusOf(
  client: Client,
  key: string,
  placement: SessionPlacement = {},
): Promise<LockStatus> {
  const checked = parseOrThrow(lockKeySchema, key, 'lock key');
  const taskQueue = placement.taskQueue ?? DEFAULT_TASK_QUEUE;
  try {
    return await client.workflow.execute<typeof lockStatus>('lockStatus', {
      taskQueue,
      workflowId: `status/${checked}/${randomUUID()}`,
      args: [checked],
      staticSummary: `status of ${checked}`,
      // With no worker on the queue the read would wait forever: bound it, and say why it failed.
      workflowExecutionTimeout: STATUS_TIMEOUT_MS,
    });
  } catch (error) {
    if (error instanceof WorkflowFailedError && error.cause instanceof TimeoutFailure)
      throw new Error(
        `no lockwarden worker read ${checked} within ${STATUS_TIMEOUT_MS / 1000} s: is one polling task queue "${taskQueue}"?`,
      );
    throw error;
  }
}

/** How long a status read may take, queueing for a worker included. */
const STATUS_TIMEOUT_MS = 15_000;
