// All of lockwarden's activities, built from one set of dependencies: what a worker registers.
import pino from 'pino';
import { createBriefingActivities, type Drafter } from './briefingActivities';
import { createDecisionActivities, type Decider } from './decisionActivities';
import { type EscalationStore, FileEscalationStore } from './escalationStore';
import { createLockActivities, type LockActivityDeps } from './lockActivities';
import { createMetrics, type Metrics } from './metrics';
import type { ModelSwitchReader } from './modelSwitch';
import { createOnCallActivities, DEFAULT_ONCALL, type OnCallConfig } from './oncallActivities';
import type { OperatorHoldLimits } from '../policy/decisions/holdLimits';
import { createFirstAttemptActivity, createRequestActivities } from './requestActivities';

/** Everything the activities depend on; the worker builds it once, tests build it with real servers. */
export interface ActivityDeps extends LockActivityDeps {
  /** Refuse a request's constraint in no known form rather than accept it as advisory (LOCKWARDEN_STRICT_CONSTRAINTS). */
  strictConstraints?: boolean;
  /** The lab-only single-process mode: lease keeping and the model key in one process (LOCKWARDEN_LAB_SINGLE_PROCESS). */
  labSingleProcess?: boolean;
  /** The operators' kill switch for the model path (temporalModelSwitch); absent, the model is always on. */
  modelSwitch?: ModelSwitchReader;
  /** The model path; null (the default) means the deterministic policy decides. */
  decider?: Decider | null;
  /** The post-mortem briefing's model lane; null (the default) means the template writes it. */
  drafter?: Drafter | null;
  oncall?: OnCallConfig;
  escalations?: EscalationStore;
  metrics?: Metrics;
  /**
   * The model worker's task queue (`lockwarden-model-worker`): sessions ask for retry decisions there
   * instead of in this worker, which then holds no model key. Null (the default): decisions are made
   * here, by `decider` or the policy (single-process mode when `decider` is set).
   */
  modelTaskQueue?: string | null;
  /** The longest hold limit and holder TTL this worker's sessions accept (its operator's maxima). */
  holdLimits?: OperatorHoldLimits;
}

/** Builds every activity the worker registers, from its dependencies (no globals). */
export function createActivities(deps: ActivityDeps) {
  const metrics = deps.metrics ?? createMetrics();
  metrics.labSingleProcess.set(deps.labSingleProcess ? 1 : 0);
  const requests = createRequestActivities({
    modelTaskQueue: deps.modelTaskQueue ?? null,
    ...(deps.holdLimits ? { holdLimits: deps.holdLimits } : {}),
    hasModel: Boolean(deps.decider),
    strictConstraints: deps.strictConstraints ?? false,
    log: deps.log,
  });
  const locks = createLockActivities({ ...deps, metrics });
  return {
    ...requests,
    ...locks,
    ...createFirstAttemptActivity(requests.checkAcquireRequest, (request) => locks.tryAcquireLock(request)),
    ...createDecisionActivities({
      decider: deps.decider ?? null,
      log: deps.log,
      metrics,
      labSingleProcess: deps.labSingleProcess ?? false,
      ...(deps.modelSwitch ? { modelSwitch: deps.modelSwitch } : {}),
    }),
    ...createBriefingActivities({
      drafter: deps.drafter ?? null,
      log: deps.log,
      ...(deps.modelSwitch ? { modelSwitch: deps.modelSwitch } : {}),
    }),
    ...createOnCallActivities({
      oncall: deps.oncall ?? DEFAULT_ONCALL,
      escalations: deps.escalations ?? new FileEscalationStore('.data/escalations.jsonl'),
      metrics,
      log: deps.log ?? pino(),
      sessions: deps.waker,
    }),
  };
}

/** The registered activities' type, for `proxyActivities<Activities>` in workflows. */
export type Activities = ReturnType<typeof createActivities>;
