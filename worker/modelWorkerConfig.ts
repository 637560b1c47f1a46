// The model worker's configuration, which refuses any lock or fencing setting.
import { z } from 'zod';
import type { ModelConfig } from '../activities/anthropicCalls';
import { DEFAULT_MODEL_TASK_QUEUE } from '../policy/constants';
import { describeIssues, InvalidConfigurationError } from '../policy/errors';
import { loadModelConfig, MODEL_VARIABLES } from './modelConfig';
import { type MetricsEndpointConfig, metricsEndpointOf, temporalEnvShape } from './temporalEnv';
import { loadTemporalTarget, type TemporalTarget } from '../temporal/connectionProfile';

const modelWorkerEnvSchema = z.object({
  ...temporalEnvShape,
  LOCKWARDEN_MODEL_TASK_QUEUE: z.string().min(1).max(200).default(DEFAULT_MODEL_TASK_QUEUE),
});

/** The variables the model worker reads: its own, and the model path's. */
const MODEL_WORKER_VARIABLES: readonly string[] = [
  ...Object.keys(modelWorkerEnvSchema.shape),
  ...MODEL_VARIABLES,
];

/** The model worker's configuration: where it polls, and the model it calls (null: the policy answers). */
export interface ModelWorkerConfig {
  /** How to reach Temporal: the connection profile (TEMPORAL_* variables over the TOML profile). */
  temporal: TemporalTarget;
  taskQueue: string;
  logLevel: z.infer<typeof modelWorkerEnvSchema>['LOG_LEVEL'];
  model: ModelConfig | null;
  /** Where `/metrics` is served (the model path's metrics and the SDK's), or null: none. */
  metrics: MetricsEndpointConfig | null;
}

// The lab host's check of its environment, `env | awk -F= '/LOCK|FENCING/'`: a line of the environment
// that names a lock or a fencing setting. Case as the seed writes it.
const LOCK_SETTING = /LOCK|FENCING/;

/**
 * The variables of `env` that speak of a lock service or fencing (the lab host's check): every line
 * `NAME=value` that matches, except the model worker's own variables (whose names say LOCKWARDEN),
 * which are judged by their value alone.
 */
export function lockSettingsIn(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([name, value]) =>
      MODEL_WORKER_VARIABLES.includes(name)
        ? LOCK_SETTING.test(value ?? '')
        : LOCK_SETTING.test(`${name}=${value ?? ''}`),
    )
    .map(([name]) => name)
    .sort();
}

/**
 * Reads the model worker's environment. Refuses to start, naming them, while any lock-service or
 * fencing variable is present: the model worker runs where no lock credential is.
 */
export function loadModelWorkerConfig(env: NodeJS.ProcessEnv = process.env): ModelWorkerConfig {
  const lockSettings = lockSettingsIn(env);
  if (lockSettings.length)
    throw new InvalidConfigurationError(
      lockSettings.map(
        (name) =>
          `${name}: the model worker holds no lock-service or fencing setting; run it where none is set`,
      ),
    );
  const present = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => !!e[1]));
  const parsed = modelWorkerEnvSchema.safeParse(present);
  if (!parsed.success) throw new InvalidConfigurationError(describeIssues(parsed.error));
  return {
    temporal: loadTemporalTarget({ env }),
    taskQueue: parsed.data.LOCKWARDEN_MODEL_TASK_QUEUE,
    logLevel: parsed.data.LOG_LEVEL,
    model: loadModelConfig(env),
    metrics: metricsEndpointOf(parsed.data),
  };
}
