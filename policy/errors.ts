// lockwarden's typed errors and the failure type names callers match on.
import type { z } from 'zod';

/**
 * The failure type names lockwarden raises, across Temporal too: callers match on these, and retry
 * policies list the non-retryable ones. Defined here once; every error class and failure uses them.
 */
export const FAILURE_TYPES = {
  invalidLockRequest: 'InvalidLockRequest',
  invalidConfiguration: 'InvalidConfiguration',
  lockNotAcquired: 'LockNotAcquired',
  leaseLost: 'LeaseLost',
  leaseActionDenied: 'LeaseActionDenied',
  invalidOperatorAnswer: 'InvalidOperatorAnswer',
  missingDriver: 'MissingDriver',
  corruptLockState: 'CorruptLockState',
  sessionNotYetStarted: 'SessionNotYetStarted',
  lockServiceCredentialsRefused: 'LockServiceCredentialsRefused',
  invalidBriefing: 'InvalidBriefing',
} as const;

/**
 * A lease its holder no longer has: its session let it go (the hold limit, missed keep-alives) or lost
 * it. Work that goes on after it runs unprotected; fenced writes with its token are refused.
 */
export class LeaseLostError extends Error {
  override readonly name = FAILURE_TYPES.leaseLost;
  constructor(
    readonly key: string,
    readonly reason: string,
  ) {
    super(`lease on ${key} was lost: ${reason}`);
  }
}

/** Thrown when a lock request fails validation; the message names each bad field and what is accepted. */
export class InvalidLockRequestError extends Error {
  override readonly name = FAILURE_TYPES.invalidLockRequest;
  constructor(
    readonly what: string,
    readonly problems: string[],
  ) {
    super(`invalid ${what}: ${problems.join('; ')}`);
  }
}

/** Type guard for {@link InvalidLockRequestError}, also across a serialization boundary (by name). */
export function isInvalidLockRequest(error: unknown): error is InvalidLockRequestError {
  return error instanceof Error && error.name === FAILURE_TYPES.invalidLockRequest;
}

/** Thrown when configuration read from the environment is invalid; names each variable at fault. */
export class InvalidConfigurationError extends Error {
  override readonly name = FAILURE_TYPES.invalidConfiguration;
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
  }
}

/** Type guard for {@link InvalidConfigurationError}. */
export function isInvalidConfiguration(error: unknown): error is InvalidConfigurationError {
  return error instanceof Error && error.name === FAILURE_TYPES.invalidConfiguration;
}

/**
 * Thrown when a lock service URL (or a fenced resource) names a backend whose driver package is not
 * installed: lockwarden's drivers for Redis, PostgreSQL and etcd are optional peer dependencies.
 */
export class MissingDriverError extends Error {
  override readonly name = FAILURE_TYPES.missingDriver;
  constructor(
    readonly what: string,
    readonly packageName: string,
    readonly versionRange: string,
  ) {
    super(
      `${what} needs the "${packageName}" package, which is not installed: npm install ${packageName}@${versionRange}`,
    );
  }
}

/** Type guard for {@link MissingDriverError}. */
export function isMissingDriver(error: unknown): error is MissingDriverError {
  return error instanceof Error && error.name === FAILURE_TYPES.missingDriver;
}

/**
 * Thrown when a lease action is refused: a release by a caller without the lease's release key, a
 * message naming another lease. Taking a lease away from its holder is an operator's force-release.
 */
export class LeaseActionDeniedError extends Error {
  override readonly name = FAILURE_TYPES.leaseActionDenied;
}

/** Type guard for {@link LeaseActionDeniedError}, also across a serialization boundary (by name). */
export function isLeaseActionDenied(error: unknown): error is LeaseActionDeniedError {
  return error instanceof Error && error.name === FAILURE_TYPES.leaseActionDenied;
}

/**
 * Thrown when what a lock service holds for a key is not what lockwarden wrote (another program's
 * value under its names, a hand edit, a type the backend cannot read): no retry mends it, and it is
 * not an outage. Names the key and what was wrong; an operator repairs or removes the record.
 */
export class CorruptLockStateError extends Error {
  override readonly name = FAILURE_TYPES.corruptLockState;
  constructor(
    readonly key: string,
    readonly problems: string[],
  ) {
    super(`the lock service's record of ${JSON.stringify(key)} is not lockwarden's: ${problems.join('; ')}`);
  }
}

/** Type guard for {@link CorruptLockStateError}, also across a serialization boundary (by name). */
export function isCorruptLockState(error: unknown): error is CorruptLockStateError {
  return error instanceof Error && error.name === FAILURE_TYPES.corruptLockState;
}

/**
 * Thrown by the client's `stateOf` when a session is still checking its request after the client has
 * asked for its state for a while: its first workflow task has not finished (no worker polls its task
 * queue, or its worker is stalled). Ask again later, or look at the session in the UI.
 */
export class SessionNotYetStartedError extends Error {
  override readonly name = FAILURE_TYPES.sessionNotYetStarted;
  constructor(readonly workflowId: string) {
    super(`session ${workflowId} is still checking its request: it has no state yet; ask again`);
  }
}

/** Type guard for {@link SessionNotYetStartedError}, also across a serialization boundary (by name). */
export function isSessionNotYetStarted(error: unknown): error is SessionNotYetStartedError {
  return error instanceof Error && error.name === FAILURE_TYPES.sessionNotYetStarted;
}

/**
 * Thrown when the lock service refuses the worker's credentials or permissions (a wrong password, an
 * unknown user, a role or ACL without the commands lockwarden runs). Not contention and not an
 * outage: no retry and no model can fix it; a human must. The message names the backend and the
 * server's own words, redacted, never the URL or its password.
 */
export class LockServiceCredentialsRefusedError extends Error {
  override readonly name = FAILURE_TYPES.lockServiceCredentialsRefused;
  constructor(readonly detail: string) {
    super(`the lock service refused the worker's credentials or permissions: ${detail}`);
  }
}

/** Type guard for {@link LockServiceCredentialsRefusedError}, also across a serialization boundary (by name). */
export function isLockServiceCredentialsRefused(error: unknown): error is LockServiceCredentialsRefusedError {
  return error instanceof Error && error.name === FAILURE_TYPES.lockServiceCredentialsRefused;
}

/** Error type names that retrying cannot fix; activities and workflows declare them non-retryable. */
export const NON_RETRYABLE_ERROR_TYPES = [
  FAILURE_TYPES.invalidLockRequest,
  FAILURE_TYPES.invalidConfiguration,
  FAILURE_TYPES.leaseActionDenied,
  FAILURE_TYPES.missingDriver,
  FAILURE_TYPES.corruptLockState,
  FAILURE_TYPES.lockServiceCredentialsRefused,
];

/** Renders zod issues as `path: message` lines, the form every typed error above carries. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map(
    (issue) => `${issue.path.length ? issue.path.join('.') : '(input)'}: ${issue.message}`,
  );
}

/** Thrown by the client's `acquire` (and by withLock) when a session ends without holding the lease. */
export class LockNotAcquiredError extends Error {
  override readonly name = FAILURE_TYPES.lockNotAcquired;
  constructor(
    readonly key: string,
    readonly outcome: { status: string; reason?: string },
  ) {
    super(`lock ${key} was not acquired: ${outcome.status}${outcome.reason ? ` (${outcome.reason})` : ''}`);
  }
}

/** Type guard for {@link LockNotAcquiredError}. */
export function isLockNotAcquired(error: unknown): error is LockNotAcquiredError {
  return error instanceof Error && error.name === FAILURE_TYPES.lockNotAcquired;
}
