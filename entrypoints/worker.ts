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
export type { LockRecord, LockService, QueuedWaiter } from '../locks/lockService';
export { SqliteLockService } from '../locks/sqliteLockService';
export { createAnthropicDecider, type ModelConfig } from '../activities/anthropicDecider';
export { createAnthropicDrafter } from '../activities/anthropicDrafter';
export { createActivities, type ActivityDeps } from '../activities';
export { type EscalationStore, FileEscalationStore } from '../activities/escalationStore';
export { createMetrics, type Metrics } from '../activities/metrics';
export type { OnCallConfig } from '../activities/oncallActivities';
export { DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS } from '../policy/constants';
export { isMissingDriver, MissingDriverError } from '../policy/errors';
