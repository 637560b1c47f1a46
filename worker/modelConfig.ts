// The model path's configuration: Anthropic's key, models and limits, read from the environment.
import { z } from 'zod';
import type { ModelConfig } from '../activities/anthropicCalls';
import { describeIssues, InvalidConfigurationError } from '../policy/errors';

const modelEnvSchema = z.object({
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  ANTHROPIC_BASE_URL: z.url().optional(),
  LOCKWARDEN_MODEL: z.string().min(1).default('claude-haiku-4-5'),
  LOCKWARDEN_LARGE_MODEL: z.string().min(1).default('claude-sonnet-4-5'),
  LOCKWARDEN_MODEL_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  LOCKWARDEN_MODEL_MAX_TOKENS: z.coerce.number().int().min(128).max(8_192).default(1_024),
  /** Comma-separated tenant identifiers masked in everything sent to the model. */
  LOCKWARDEN_SENSITIVE_TENANTS: z.string().optional(),
});

/** The variables the model path reads. */
export const MODEL_VARIABLES: readonly string[] = Object.keys(modelEnvSchema.shape);

// A lock service's address or credential: the model path must never hold one.
const LOCK_CREDENTIAL = /^(sqlite:|redis(s)?:\/\/|postgres(ql)?:\/\/|etcd:\/\/)|:\/\/[^/\s]*:[^/\s]*@/i;

/** Refuses a model configuration that carries anything that could reach or unlock a lock service. */
function assertNoLockCredentials(config: ModelConfig, env: NodeJS.ProcessEnv = process.env): void {
  const lockUrl = env.LOCK_SERVICE_URL;
  for (const [field, value] of Object.entries(config)) {
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) {
      if (typeof v !== 'string') continue;
      if (LOCK_CREDENTIAL.test(v) || (lockUrl && v.includes(lockUrl))) {
        throw new InvalidConfigurationError([
          `${field}: the model path's configuration holds a lock-service address or credential`,
        ]);
      }
    }
  }
}

/**
 * The model path's configuration, or null when no API key is set (the deterministic policy then
 * decides). Reads only the variables above: no lock-service URL or credential enters it.
 */
export function loadModelConfig(env: NodeJS.ProcessEnv = process.env): ModelConfig | null {
  const present = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => !!e[1]));
  const parsed = modelEnvSchema.safeParse(present);
  if (!parsed.success) throw new InvalidConfigurationError(describeIssues(parsed.error));
  const c = parsed.data;
  if (!c.ANTHROPIC_API_KEY) return null;
  const config: ModelConfig = {
    apiKey: c.ANTHROPIC_API_KEY,
    baseURL: c.ANTHROPIC_BASE_URL,
    model: c.LOCKWARDEN_MODEL,
    largeModel: c.LOCKWARDEN_LARGE_MODEL,
    timeoutMs: c.LOCKWARDEN_MODEL_TIMEOUT_MS,
    maxTokens: c.LOCKWARDEN_MODEL_MAX_TOKENS,
    sensitiveTenants: (c.LOCKWARDEN_SENSITIVE_TENANTS ?? '')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  };
  assertNoLockCredentials(config, env);
  return config;
}
