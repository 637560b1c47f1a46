// The lock worker's configuration, read from the environment and checked with zod.
import { z } from 'zod';
import { DEFAULT_ESCALATION_FILE_MAX_BYTES } from '../activities/escalationStore';
import { DEFAULT_ONCALL, type OnCallConfig } from '../activities/oncallActivities';
import { DEFAULT_LOCK_SERVICE_URL } from '../locks/openLockService';
import {
  DEFAULT_QUEUE_SWEEP_MS,
  MAX_QUEUE_SWEEP_MS,
  DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS,
  DEFAULT_MAX_CACHED_WORKFLOWS,
  DEFAULT_MAX_KEYS_PER_REQUESTER,
  DEFAULT_MAX_WAITERS_PER_KEY,
  DEFAULT_TASK_QUEUE,
  IDLE_KEY_RETENTION_MS,
  LOCKWARDEN_VERSION,
} from '../policy/constants';
import { ABSOLUTE_MAX_TTL_MS } from '../policy/lockContract/lockTerms';
import { buildIdSchema, deploymentNameSchema } from '../policy/deploymentVersion';
import { describeIssues, InvalidConfigurationError } from '../policy/errors';
import { type MetricsEndpointConfig, metricsEndpointOf, temporalEnvShape } from './temporalEnv';
import { loadTemporalTarget, type TemporalTarget } from '../temporal/connectionProfile';
import {
  ABSOLUTE_MAX_HOLD_MS,
  ABSOLUTE_MAX_HOLDER_TTL_MS,
  DEFAULT_OPERATOR_HOLD_LIMITS,
  MIN_HOLDER_TTL_MS,
  type OperatorHoldLimits,
} from '../policy/decisions/holdLimits';

const workerConfigSchema = z.object({
  ...temporalEnvShape,
  LOCKWARDEN_TASK_QUEUE: z.string().min(1).max(200).default(DEFAULT_TASK_QUEUE),
  LOCKWARDEN_MODEL_TASK_QUEUE: z.string().min(1).max(200).optional(),
  // Refuse a request's constraint in no known form instead of accepting it as advisory.
  LOCKWARDEN_STRICT_CONSTRAINTS: z.enum(['true', 'false']).default('false'),
  // A lab's one process that both keeps leases and holds the model key (seed 003: never in production).
  LOCKWARDEN_LAB_SINGLE_PROCESS: z.enum(['true', 'false']).default('false'),
  LOCK_SERVICE_URL: z.string().min(1).default(DEFAULT_LOCK_SERVICE_URL),
  LOCK_MAX_TTL_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(ABSOLUTE_MAX_TTL_MS)
    .default(10 * 60 * 1000),
  // How long the lock service keeps a key with no lease and no ticket (a key used once) before the
  // sweep has it forgotten: what `lockctl status` shows of a released key's newest token meanwhile.
  // 0 keeps every key, as 0.1.0 did: while 0.1.0's workers (which count tokens per key) still run.
  LOCKWARDEN_IDLE_KEY_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(24 * 60 * 60 * 1000)
    .refine((ms) => ms === 0 || ms >= 1_000, 'must be 0 (keep every key) or from 1000 ms')
    .default(IDLE_KEY_RETENTION_MS),
  // A key's queue beyond this many live tickets denies newcomers QUEUE_FULL: a runaway caller's bound.
  LOCKWARDEN_MAX_WAITERS_PER_KEY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(DEFAULT_MAX_WAITERS_PER_KEY),
  // A requester name holding or waiting for this many keys is denied REQUESTER_LIMIT on another.
  LOCKWARDEN_MAX_KEYS_PER_REQUESTER: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(DEFAULT_MAX_KEYS_PER_REQUESTER),
  LOCKWARDEN_MAX_HOLD_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(ABSOLUTE_MAX_HOLD_MS)
    .default(DEFAULT_OPERATOR_HOLD_LIMITS.maxHoldMs),
  LOCKWARDEN_MAX_HOLDER_TTL_MS: z.coerce
    .number()
    .int()
    .min(MIN_HOLDER_TTL_MS)
    .max(ABSOLUTE_MAX_HOLDER_TTL_MS)
    .default(DEFAULT_OPERATOR_HOLD_LIMITS.maxHolderTtlMs),
  ONCALL_WEBHOOK_URL: z.url().optional(),
  LOCKWARDEN_ESCALATIONS_FILE: z.string().min(1).default('.data/escalations.jsonl'),
  // Rotated past this size to <file>.1: a read at each escalation costs at most two such files.
  LOCKWARDEN_ESCALATIONS_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(1024 * 1024 * 1024)
    .default(DEFAULT_ESCALATION_FILE_MAX_BYTES),
  // A day at most: a longer window is read from the store and visibility at every escalation.
  LOCKWARDEN_REVIEW_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(24 * 60 * 60 * 1000)
    .default(DEFAULT_ONCALL.reviewWindowMs),
  LOCKWARDEN_REVIEW_THRESHOLD: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(DEFAULT_ONCALL.reviewThreshold),
  LOCKWARDEN_METRICS_KEY_LABELS: z.enum(['true', 'false']).default('false'),
  LOCKWARDEN_ISOLATE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(24 * 60 * 60 * 1000)
    .default(DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS),
  // 0 turns the cache off (every task replays the whole history); the SDK refuses 1.
  LOCKWARDEN_MAX_CACHED_WORKFLOWS: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_000_000)
    .refine((n) => n !== 1, 'must be 0 (no cache) or at least 2')
    .default(DEFAULT_MAX_CACHED_WORKFLOWS),
  LOCKWARDEN_QUEUE_SWEEP_MS: z.coerce
    .number()
    .int()
    .min(500)
    .max(MAX_QUEUE_SWEEP_MS)
    .default(DEFAULT_QUEUE_SWEEP_MS),
  LOCKWARDEN_DEPLOYMENT: deploymentNameSchema.optional(),
  LOCKWARDEN_BUILD_ID: buildIdSchema.default(LOCKWARDEN_VERSION),
});

/** A Worker Deployment Version: the deployment's name and this build's id. */
export interface WorkerDeployment {
  name: string;
  buildId: string;
}

/** The worker's configuration, read once from the environment at start. */
export interface WorkerConfig {
  /** How to reach Temporal: the connection profile (TEMPORAL_* variables over the TOML profile). */
  temporal: TemporalTarget;
  taskQueue: string;
  /**
   * The model worker's task queue: sessions ask for decisions there, and this worker holds no model
   * key. Null: decisions are made in this worker (single-process mode when a model key is set).
   */
  modelTaskQueue: string | null;
  lockServiceUrl: string;
  lockMaxTtlMs: number;
  /** What the lock service keeps of idle keys, and how many waiters a key takes. */
  lockLimits: { idleKeyRetentionMs: number; maxWaitersPerKey: number; maxKeysPerRequester: number };
  /** The longest hold limit and holder TTL a request may ask for. */
  holdLimits: OperatorHoldLimits;
  /** Refuse a constraint in no known form (LOCKWARDEN_STRICT_CONSTRAINTS); otherwise it is advisory. */
  strictConstraints: boolean;
  /** The lab-only single-process mode (LOCKWARDEN_LAB_SINGLE_PROCESS): lease keeping and the model key in one process. */
  labSingleProcess: boolean;
  logLevel: z.infer<typeof workerConfigSchema>['LOG_LEVEL'];
  oncall: OnCallConfig;
  escalationsFile: string;
  /** The escalation file's size past which it is rotated (LOCKWARDEN_ESCALATIONS_MAX_BYTES). */
  escalationsMaxBytes: number;
  /** How long one workflow activation may run (see DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS). */
  isolateExecutionTimeoutMs: number;
  /** How many sessions the worker keeps cached (see DEFAULT_MAX_CACHED_WORKFLOWS). */
  maxCachedWorkflows: number;
  /** How often the worker looks for stalled queues (worker/queueSweep.ts). */
  queueSweepMs: number;
  /**
   * The Worker Deployment Version this worker registers (Worker Versioning, sessions pinned to the
   * version that started them), or null: an unversioned worker.
   */
  deployment: WorkerDeployment | null;
  /** Where `/metrics` is served (lockwarden's and the SDK's), or null: no metrics endpoint. */
  metrics: (MetricsEndpointConfig & { keyLabels: boolean }) | null;
}

/** Reads and validates the worker's environment; throws InvalidConfiguration naming each bad variable. */
export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const parsed = workerConfigSchema.safeParse(withoutEmpty(env));
  if (!parsed.success) throw new InvalidConfigurationError(describeIssues(parsed.error));
  const c = parsed.data;
  return {
    temporal: loadTemporalTarget({ env }),
    taskQueue: c.LOCKWARDEN_TASK_QUEUE,
    modelTaskQueue: c.LOCKWARDEN_MODEL_TASK_QUEUE ?? null,
    lockServiceUrl: c.LOCK_SERVICE_URL,
    lockMaxTtlMs: c.LOCK_MAX_TTL_MS,
    lockLimits: {
      idleKeyRetentionMs: c.LOCKWARDEN_IDLE_KEY_RETENTION_MS,
      maxWaitersPerKey: c.LOCKWARDEN_MAX_WAITERS_PER_KEY,
      maxKeysPerRequester: c.LOCKWARDEN_MAX_KEYS_PER_REQUESTER,
    },
    holdLimits: { maxHoldMs: c.LOCKWARDEN_MAX_HOLD_MS, maxHolderTtlMs: c.LOCKWARDEN_MAX_HOLDER_TTL_MS },
    strictConstraints: c.LOCKWARDEN_STRICT_CONSTRAINTS === 'true',
    labSingleProcess: c.LOCKWARDEN_LAB_SINGLE_PROCESS === 'true',
    logLevel: c.LOG_LEVEL,
    oncall: {
      webhookUrl: c.ONCALL_WEBHOOK_URL ?? null,
      reviewWindowMs: c.LOCKWARDEN_REVIEW_WINDOW_MS,
      reviewThreshold: c.LOCKWARDEN_REVIEW_THRESHOLD,
    },
    escalationsFile: c.LOCKWARDEN_ESCALATIONS_FILE,
    escalationsMaxBytes: c.LOCKWARDEN_ESCALATIONS_MAX_BYTES,
    isolateExecutionTimeoutMs: c.LOCKWARDEN_ISOLATE_TIMEOUT_MS,
    maxCachedWorkflows: c.LOCKWARDEN_MAX_CACHED_WORKFLOWS,
    queueSweepMs: c.LOCKWARDEN_QUEUE_SWEEP_MS,
    deployment: c.LOCKWARDEN_DEPLOYMENT
      ? { name: c.LOCKWARDEN_DEPLOYMENT, buildId: c.LOCKWARDEN_BUILD_ID }
      : null,
    metrics: withKeyLabels(metricsEndpointOf(c), c.LOCKWARDEN_METRICS_KEY_LABELS === 'true'),
  };
}

/**
 * Where this worker's decisions come from: the model worker's task queue (`model-worker`: this
 * process holds no model key, and one set here is refused), the policy alone (`policy`), or, only
 * when the operator opts into the lab mode by name (LOCKWARDEN_LAB_SINGLE_PROCESS=true), a model
 * called in this process (`lab-single-process`). Seed 003: "Teams whose one process must both draft
 * and renew should stop": a lock worker given ANTHROPIC_API_KEY otherwise refuses to start, naming
 * the two roles.
 */
export function decisionMode(
  config: Pick<WorkerConfig, 'modelTaskQueue'> & Partial<Pick<WorkerConfig, 'labSingleProcess'>>,
  hasModelKey: boolean,
): 'model-worker' | 'lab-single-process' | 'policy' {
  if (config.modelTaskQueue && hasModelKey)
    throw new InvalidConfigurationError([
      'ANTHROPIC_API_KEY: a lock worker that sends decisions to the model worker ' +
        `(LOCKWARDEN_MODEL_TASK_QUEUE=${config.modelTaskQueue}) holds no model key; give it to lockwarden-model-worker`,
    ]);
  if (config.modelTaskQueue) return 'model-worker';
  if (!hasModelKey) return 'policy';
  if (config.labSingleProcess) return 'lab-single-process';
  throw new InvalidConfigurationError([
    'ANTHROPIC_API_KEY: this lock worker keeps leases, so it holds no model key. Run the two roles apart: ' +
      'lockwarden-model-worker with the key, and this worker (lockwarden-worker) without it and with ' +
      'LOCKWARDEN_MODEL_TASK_QUEUE naming the model worker\'s queue (docs/operations.md, "Two worker roles"). ' +
      'A lab may run both in one process with LOCKWARDEN_LAB_SINGLE_PROCESS=true, never in production',
  ]);
}

// An exported-but-empty variable means "unset" here, as it does for most CLIs.
function withoutEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => !!e[1]));
}

// The endpoint, labelled with keys or not (LOCKWARDEN_METRICS_KEY_LABELS); null stays null.
function withKeyLabels(endpoint: MetricsEndpointConfig | null, keyLabels: boolean) {
  return endpoint ? { ...endpoint, keyLabels } : null;
}
