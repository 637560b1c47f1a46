import type { z } from 'zod';

/** Thrown when a lock request fails validation; the message names each bad field and what is accepted. */
export class InvalidLockRequestError extends Error {
  override readonly name = 'InvalidLockRequest';
  constructor(
    readonly what: string,
    readonly problems: string[],
  ) {
    super(`invalid ${what}: ${problems.join('; ')}`);
  }
}

/** Type guard for {@link InvalidLockRequestError}, also across a serialization boundary (by name). */
export function isInvalidLockRequest(error: unknown): error is InvalidLockRequestError {
  return error instanceof Error && error.name === 'InvalidLockRequest';
}

/** Thrown when configuration read from the environment is invalid; names each variable at fault. */
export class InvalidConfigurationError extends Error {
  override readonly name = 'InvalidConfiguration';
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
  }
}

/** Type guard for {@link InvalidConfigurationError}. */
export function isInvalidConfiguration(error: unknown): error is InvalidConfigurationError {
  return error instanceof Error && error.name === 'InvalidConfiguration';
}

/** Error type names that retrying cannot fix; activities and workflows declare them non-retryable. */
export const NON_RETRYABLE_ERROR_TYPES = ['InvalidLockRequest', 'InvalidConfiguration'] as const;

/** Renders zod issues as `path: message` lines, the form every typed error above carries. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map(
    (issue) => `${issue.path.length ? issue.path.join('.') : '(input)'}: ${issue.message}`,
  );
}

/** Thrown by the client's `acquire` (and by withLock) when a session ends without holding the lease. */
export class LockNotAcquiredError extends Error {
  override readonly name = 'LockNotAcquired';
  constructor(
    readonly key: string,
    readonly outcome: { status: string; reason?: string; why?: string },
  ) {
    super(
      `lock ${key} was not acquired: ${outcome.status}${outcome.reason ? ` (${outcome.reason})` : outcome.why ? ` (${outcome.why})` : ''}`,
    );
  }
}

/** Type guard for {@link LockNotAcquiredError}. */
export function isLockNotAcquired(error: unknown): error is LockNotAcquiredError {
  return error instanceof Error && error.name === 'LockNotAcquired';
}
