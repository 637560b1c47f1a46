import path from 'node:path';
import { z } from 'zod';
import { describeIssues, InvalidConfigurationError } from '../policy/errors';
import type { LockService } from './lockService';
import { SqliteLockService } from './sqliteLockService';

/** The embedded default: a SQLite file beside the checkout's other local state. */
export const DEFAULT_LOCK_SERVICE_URL = `sqlite:${path.join('.data', 'locks.sqlite')}`;

const lockServiceUrlSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .refine((url) => /^sqlite:.+/.test(url), {
    message: 'must be sqlite:<path> (the embedded backend; the others arrive with the lock-service layer)',
  });

/** Opens the lock service a URL names; throws InvalidConfiguration naming the URL's problem. */
export function lockServiceFromUrl(url: string, options: { maxTtlMs?: number } = {}): LockService {
  const parsed = lockServiceUrlSchema.safeParse(url);
  if (!parsed.success) {
    throw new InvalidConfigurationError(
      describeIssues(parsed.error).map((p) => `LOCK_SERVICE_URL ${p.replace(/^\(input\): /, '')}`),
    );
  }
  const file = parsed.data.slice('sqlite:'.length);
  return new SqliteLockService({ path: file, ...options });
}
