// `lockwarden/workflow`: what a user's workflow code imports. Everything reachable from here is
// workflow-safe (no Node built-in, no driver): test/package.test.ts bundles a user workflow that
// imports it and fails on either.
export { withLock, type WithLockOptions } from '../workflows/withLock';
export {
  awaitLease,
  deadlockFound,
  lockReleased,
  releaseLease,
  requestRelease,
  resolveEscalation,
  resolveEscalationSignal,
  sessionState,
} from '../temporal/messages';
export { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';
export { FAILURE_TYPES } from '../policy/errors';
export { acquisitionWorkflowId } from '../policy/constants';
export type { AcquireRequestInput, RetryBudget } from '../policy/decisions/acquireRequest';
export type { Fairness, Lease } from '../policy/lockContract/lockSchemas';
export type {
  OperatorDecisionInput,
  ReleaseAnswer,
  SessionNews,
  SessionOutcome,
  SessionState,
} from '../policy/sessionModel/sessionTypes';
