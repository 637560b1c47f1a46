// `lockwarden/model-worker`: the model role in a process of the user's own. Nothing here reaches the
// lock service: this entry point's module graph has no path to `locks/` (test/boundary.test.ts).
export { createModelWorker, type ModelWorkerOptions } from '../worker/modelWorker';
export { loadModelWorkerConfig, lockSettingsIn, type ModelWorkerConfig } from '../worker/modelWorkerConfig';
export type { MetricsEndpointConfig } from '../worker/temporalEnv';
export { createAnthropicDecider, type ModelConfig } from '../activities/anthropicDecider';
export { createAnthropicDrafter } from '../activities/anthropicDrafter';
export { DEFAULT_MODEL_TASK_QUEUE } from '../policy/constants';
