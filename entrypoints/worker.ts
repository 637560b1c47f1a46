// `lockwarden/worker`: what a worker process needs to run lockwarden's sessions, in a worker of the
// user's own (the plugin) or in one of lockwarden's (the factory).
export {
  LockwardenPlugin,
  type LockwardenPluginOptions,
  withLockwardenWorkflows,
} from '../worker/lockwardenPlugin';
export {
  createLockwardenWorker,
  type LockwardenWorkerOptions,
  WORKFLOWS_PATH,
  type WorkflowSource,
} from '../worker/createWorker';
export { loadWorkerConfig, type WorkerConfig } from '../worker/config';
export { loadModelConfig } from '../worker/modelConfig';
export { DEFAULT_LOCK_SERVICE_URL, openLockService } from '../locks/openLockService';
export type { LockRecord, LockService, LockServiceLimits, QueuedWaiter } from '../locks/lockService';
export { SqliteLockService } from '../locks/sqliteLockService';
export { createAnthropicDecider, type ModelConfig } from '../activities/anthropicDecider';
export { createAnthropicDrafter } from '../activities/anthropicDrafter';
export { createActivities, type ActivityDeps } from '../activities';
export {
  DEFAULT_ESCALATION_FILE_MAX_BYTES,
  type EscalationStore,
  FileEscalationStore,
  type FileEscalationStoreOptions,
} from '../activities/escalationStore';
export { createMetrics, createModelWorkerMetrics, type Metrics } from '../activities/metrics';
export { MODEL_ALWAYS_ON, type ModelSwitchReader, temporalModelSwitch } from '../activities/modelSwitch';
export type { OnCallConfig } from '../activities/oncallActivities';
export { DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS } from '../policy/constants';
export { boundLocalAttempts, lockwardenActivityInterceptors } from '../worker/localAttemptBound';
export { type Tracing, tracingConfigured, tracingFromEnv } from '../temporal/tracing';
export {
  isLockServiceCredentialsRefused,
  isMissingDriver,
  LockServiceCredentialsRefusedError,
  MissingDriverError,
} from '../policy/errors';

// The types the exports above name in their signatures: for implementing a decider, a drafter, an
// escalation store or a lock service of your own, and for reading what the activities answer.
export type { Decider } from '../activities/decisionActivities';
export type { DraftAnswer, Drafter } from '../activities/briefingActivities';
export type { DraftRequest } from '../policy/postmortem/modelDraft';
export type {
  EscalationContention,
  EscalationNotice,
  EscalationRecord,
  EscalationResolution,
  ResolutionRecord,
} from '../activities/escalationStore';
export type { KeeperEnd, KeepPlan, LeaseKeepers } from '../activities/leaseKeeper';
export type { LiveLease, ReleasedBy, SeenHolder, SessionAttempt } from '../activities/lockActivities';
export type { CheckedFirstAttempt, CheckedRequest } from '../activities/requestActivities';
export type { MetricsOptions, ParkedSessions } from '../activities/metrics';
export type { ModelAnswer } from '../activities/anthropicDecider';
export type { SessionWaker } from '../activities/sessionSignals';
export type { SqliteLockServiceOptions } from '../locks/sqliteLockService';
export type { LowLease, StalledQueue } from '../locks/lockService';
export type { WorkerDeployment } from '../worker/config';
export type { DecisionRecord, PolicyInput, PolicyTuning } from '../policy/decisions/decisionPolicy';
export {
  type DecisionContext,
  decisionContextSchema,
  type DecisionProvider,
  FALLBACK_CAUSES,
  type FallbackCause,
  type RetryDecision,
  retryDecisionSchema,
} from '../policy/decisions/retryDecision';
export type { AcquireRequest, SessionRequest } from '../policy/decisions/acquireRequest';
export type { OperatorHoldLimits } from '../policy/decisions/holdLimits';
export { type BriefingDraft, briefingDraftSchema } from '../policy/postmortem/modelDraft';
export type { RedactionCounts } from '../policy/textSafety/redaction';
export type { Overtaking, QueuedTicket } from '../policy/lockContract/fairness';
