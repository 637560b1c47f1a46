// `lockwarden/client`: acquiring and releasing from code outside a workflow, through a Temporal
// client, and the error classes every entry point may throw.
export {
  acquire,
  acquisitionWorkflowId,
  awaitLeaseOf,
  forceRelease,
  release,
  resolve,
  type AwaitedAcquisition,
  type HeldLease,
  type SessionPlacement,
  type StartedAcquisition,
  startAcquisition,
  startAwaitingLease,
  stateOf,
  statusOf,
  withLease,
  workflowUiUrl,
} from '../client/lockwardenClient';
export { type ClientTarget, connectClient } from '../client/connect';
export { type Tracing, tracingConfigured, tracingFromEnv } from '../temporal/tracing';
export { closeSafeRetries, connectTemporal, refuseCallsAfterClose } from '../temporal/closeSafeRetries';
export {
  loadTemporalTarget,
  type TemporalProfileOptions,
  type TemporalTarget,
} from '../temporal/connectionProfile';
export { connectOrExplain, TemporalConnectError } from '../temporal/connectFailure';
export {
  isDeniedByTemporal,
  type NamespacePermission,
  PermissionDeniedError,
  permissionOf,
} from '../client/permissionDenied';
export { type HolderKeepAlive, keepHolderAlive } from '../client/holderKeepAlive';
export {
  DEFAULT_HOLDER_TTL_MS,
  DEFAULT_MAX_HOLD_MS,
  holderLivenessActivityId,
} from '../policy/decisions/holdLimits';
export {
  CorruptLockStateError,
  FAILURE_TYPES,
  InvalidConfigurationError,
  InvalidLockRequestError,
  isCorruptLockState,
  isInvalidConfiguration,
  isInvalidLockRequest,
  isLeaseActionDenied,
  isLockNotAcquired,
  isMissingDriver,
  isSessionNotYetStarted,
  LeaseActionDeniedError,
  LeaseLostError,
  LockNotAcquiredError,
  MissingDriverError,
  SessionNotYetStartedError,
} from '../policy/errors';
export type { AcquireRequestInput, RetryBudget } from '../policy/decisions/acquireRequest';
export type { Fairness, FencedActionResult, Lease } from '../policy/lockContract/lockSchemas';
export type { LockStatus } from '../policy/lockContract/keyStatus';
export type {
  OperatorDecisionInput,
  ReleaseAnswer,
  SessionNews,
  SessionOutcome,
  SessionState,
  RequestBeingChecked,
  StateAnswer,
} from '../policy/sessionModel/sessionTypes';

// The types and schemas the exports above name: what a session answers, and the request's schemas
// (zod), for checking input at your own boundary the way lockwarden does.
export { acquireRequestSchema, retryBudgetSchema } from '../policy/decisions/acquireRequest';
export { operatorDecisionSchema } from '../policy/decisions/operatorAnswer';
export {
  type AcquireAttempt,
  type Denial,
  denialSchema,
  fairnessSchema,
  type Holding,
  leaseSchema,
  type Wait,
} from '../policy/lockContract/lockSchemas';
export type { QueuedWaiterStatus } from '../policy/lockContract/keyStatus';
export type { WaitForEdge } from '../policy/lockContract/waitForGraph';
export type { AppliedAs } from '../policy/decisions/guardrails';
export type {
  DeadlockFacts,
  DeadlockNotice,
  LeaseAnswer,
  LeaseOwner,
  RecordedDecision,
} from '../policy/sessionModel/sessionTypes';
export type { ReleaseNotice } from '../temporal/messages';
export { modelSwitchStatus, switchModelOff, switchModelOn } from '../client/modelSwitch';
export type { ModelSwitchChange, ModelSwitchState } from '../policy/decisions/modelSwitch';
