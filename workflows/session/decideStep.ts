// Asking for a retry decision after a denial, and what the guardrails make of it.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { buildDecisionContext } from '../../policy/decisions/decisionContext';
import type { PolicyTuning } from '../../policy/decisions/decisionPolicy';
import { LOCAL_CALL_SCHEDULE_TO_CLOSE_MS } from '../../policy/constants';
import { NON_RETRYABLE_ERROR_TYPES } from '../../policy/errors';
import {
  appliedAs,
  type GuardedStep,
  guardDecision,
  type RetryProgress,
} from '../../policy/decisions/guardrails';
import type { Denial } from '../../policy/lockContract/lockSchemas';
import { SESSION_QUEUE_TICKET_MS } from '../../policy/lockContract/lockTerms';
import { type DecisionRecord, type PolicyInput, policyRecord } from '../../policy/decisions/decisionPolicy';
import { parkStepFor, parkUntilTold } from '../../policy/decisions/waiting';
import type { WaitForEdge } from '../../policy/lockContract/waitForGraph';
import type { DecisionRoute, LockSession } from './lockSession';
import { onModelWorker } from '../modelWorkerCalls';
import { sessionLog, sessionMetrics } from './metricsSink';
import { inSpan } from '../../temporal/spans';
import { sessionAttributes } from './sessionTrace';

// Rate limits and overload are backed off by Temporal, a bounded number of times; after that the
// workflow's own deterministic policy answers.
const DECISION_OPTIONS = {
  startToCloseTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 4,
    nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
  },
} as const;
const { decideRetry } = proxyActivities<Activities>(DECISION_OPTIONS);
// Bounded per attempt by the worker's interceptor, not by a start-to-close (workflows/lockCalls.ts).
const { decideByPolicy } = proxyLocalActivities<Activities>({
  scheduleToCloseTimeout: LOCAL_CALL_SCHEDULE_TO_CLOSE_MS,
  retry: DECISION_OPTIONS.retry,
});

/** A decision and what the guardrails made of it. */
interface DecidedStep {
  record: DecisionRecord;
  step: GuardedStep;
}

/**
 * Asks for a retry decision after a denial (model or policy, in the decision activity), then applies
 * the guardrails, here and only here, and records the decision in the session's state. A wake-up (a
 * release, a deadlock notice) that comes while the decision is being made cancels it: the session
 * tries at once rather than wait for a slow model. Then the answer is 'woken'.
 */
export async function decideAfterDenial(
  session: LockSession,
  denial: Denial,
  waitForEdges: WaitForEdge[],
  parks: boolean,
): Promise<DecidedStep | 'woken'> {
  const attempts = session.attempts;
  const progress = { attempts, elapsedMs: session.waitedMs() };
  const tuning: PolicyTuning = {
    baseBackoffMs: session.budget.baseBackoffMs,
    maxBackoffMs: session.budget.maxBackoffMs,
    previousBackoffMs: session.previousBackoffMs,
    queueTicketMs: SESSION_QUEUE_TICKET_MS,
  };
  const context = buildDecisionContext({
    request: { ...session.request, budget: session.budget },
    denial,
    attempts,
    unchangedDenials: session.unchangedDenials,
    elapsedMs: progress.elapsedMs,
    recentDecisions: session.recentDecisions,
    waitForEdges,
    parks,
  });
  // The workflow's seeded, replay-safe generator.
  const input = { context, tuning, jitterSample: Math.random() };
  const attributes = { ...sessionAttributes(session), 'lockwarden.attempt': attempts };
  return inSpan<DecidedStep | 'woken'>('lockwarden.decide', attributes, async (span) => {
    // A local activity is never cancelled: the SDK's core fails the workflow task, on every replay,
    // when a wake-up cancels one whose result it already holds (docs/reliability.md). The policy answers
    // in a millisecond; a wake-up during it still ends the park that follows at once.
    const record = decidesLocally(input, session.decisions)
      ? await decide(input, session.decisions)
      : await unlessWoken(session, () => decide(input, session.decisions));
    if (record === 'woken') {
      span.setAttribute('lockwarden.decision', 'cut short by a wake-up');
      return 'woken';
    }
    // The model's delay is jittered with the sample drawn above: the policy, which had it, did not answer.
    const rules = {
      noEscalationBeforeMs: session.constraints.noEscalationBeforeMs,
      jitterSample: record.provider === 'anthropic' ? input.jitterSample : null,
    };
    const guarded = guardDecision(record.decision, progress, session.budget, rules);
    // A waiter that parks is woken by a release: one timer, bounded by the budget, that a release cuts
    // short. A policy's delay gives way to it; a model's ends it when shorter than the holder's lease
    // left (parkStepFor), so the delay the model gave is not dropped.
    const parked = guarded.kind === 'sleep' && parks;
    const modelDelayMs = guarded.kind === 'sleep' && record.provider === 'anthropic' ? guarded.sleepMs : null;
    const step = parked ? parkStep(progress, session, modelDelayMs, context.holderLeaseRemainingMs) : guarded;

    session.recordDecision(record, step, denial, progress, parked);
    sessionLog.decided({
      key: session.key,
      requester: session.requester,
      attempt: attempts,
      provider: record.provider,
      model: record.model,
      decision: record.decision.decision,
      backoffRequestedMs: record.decision.retry_after_ms ?? null,
      backoffAppliedMs: step.kind === 'sleep' ? step.sleepMs : null,
      appliedAs: appliedAs(step, parked),
      fallbackCause: record.fallbackCause,
      starvationRisk: record.decision.starvation_risk,
      ...(record.labSingleProcess ? { labSingleProcess: true } : {}),
    });
    span.setAttributes({
      'lockwarden.provider': record.provider,
      'lockwarden.model': record.model ?? 'none',
      'lockwarden.decision': record.decision.decision,
      'lockwarden.applied_as': appliedAs(step, parked),
      ...(step.kind === 'sleep' ? { 'lockwarden.backoff_applied_ms': step.sleepMs } : {}),
      ...(record.fallbackCause ? { 'lockwarden.fallback_cause': record.fallbackCause } : {}),
    });
    return { record, step };
  });
}

/**
 * A parked waiter's sleep until told (parkUntilTold), or until a model's shorter delay ends it
 * (parkStepFor), or the escalation the guardrails make of a spent budget.
 */
export function parkStep(
  progress: RetryProgress,
  session: LockSession,
  modelDelayMs: number | null = null,
  holderLeaseRemainingMs: number | null = null,
): GuardedStep {
  const due = parkStepFor(parkUntilTold(progress, session.budget), modelDelayMs, holderLeaseRemainingMs);
  return due.kind === 'stop'
    ? { kind: 'escalate', reason: `budget spent (${due.why})`, deadlock: false }
    : due;
}

/** Runs `work` unless the session is woken first: then `work` is cancelled and the answer is 'woken'. */
async function unlessWoken<T>(session: LockSession, work: () => Promise<T>): Promise<T | 'woken'> {
  const working = new CancellationScope();
  const watching = new CancellationScope();
  const result = working.run(work);
  const woken = watching.run(() => condition(() => session.woken));
  try {
    const first = await Promise.race([
      result.then((value) => ({ value })),
      woken.then(() => 'woken' as const),
    ]);
    if (first !== 'woken') return first.value;
    working.cancel();
    result.catch(() => undefined); // cancelled on purpose: its failure is expected and not wanted
    return 'woken';
  } finally {
    watching.cancel();
    woken.catch(() => undefined);
  }
}

// Whether decide() answers in a local activity: the policy, by the session's choice or in an outage.
function decidesLocally(input: PolicyInput, route: DecisionRoute): boolean {
  return input.context.errorCode === 'UNAVAILABLE' || (!route.modelTaskQueue && route.byPolicy);
}

// The decision activity (here, or on the model worker's queue), or the policy when it has failed for
// good. With no model on the session's worker, the policy answers in a local activity: no activity
// task and no second workflow task between a denial and the park.
async function decide(input: PolicyInput, route: DecisionRoute): Promise<DecisionRecord> {
  // The lock service is out of reach: an outage, not contention, and a model has nothing to judge
  // in it; the policy backs off, and the record says why.
  if (input.context.errorCode === 'UNAVAILABLE')
    return decideByPolicy.executeWithOptions(
      { summary: `retry decision, attempt ${input.context.attempt}: the lock service is unreachable` },
      [input, 'lock-service-unreachable'],
    );
  try {
    const activity = route.modelTaskQueue
      ? onModelWorker(route.modelTaskQueue, DECISION_OPTIONS).decideRetry
      : route.byPolicy
        ? decideByPolicy
        : decideRetry;
    return await activity.executeWithOptions(
      { summary: `retry decision, attempt ${input.context.attempt}` },
      [input],
    );
  } catch (error) {
    // A local activity's failure may arrive as it was thrown, not wrapped in an ActivityFailure.
    const failed = error instanceof ActivityFailure ? (error.cause ?? error) : error;
    if (!(error instanceof ActivityFailure) && !(route.byPolicy && failed instanceof ApplicationFailure))
      throw error;
    const record = policyRecord(input, 'model-unavailable', (failed as Error).message);
    sessionMetrics.decidedInWorkflow(record.decision.decision, 'model-unavailable');
    return record;
  }
}
