import { defineSearchAttributeKey } from '@temporalio/common';

/** Task queue the worker polls when none is configured; clients start sessions on the same one. */
export const DEFAULT_TASK_QUEUE = 'lockwarden';

/** Namespace used when none is configured (the dev server's default). */
export const DEFAULT_NAMESPACE = 'default';

/** The lock service's observed latency floor: no retry is ever scheduled sooner than this. */
export const LATENCY_FLOOR_MS = 50;

/**
 * Search attributes a session upserts, so operators can list sessions by key, requester and state in
 * the Temporal UI. scripts/search-attributes.txt registers the same names on the dev server.
 */
export const SEARCH_ATTRIBUTES = {
  lockKey: defineSearchAttributeKey('LockKey', 'KEYWORD'),
  lockRequester: defineSearchAttributeKey('LockRequester', 'KEYWORD'),
  lockState: defineSearchAttributeKey('LockState', 'KEYWORD'),
} as const;

/** Where a session stands, as shown in its LockState search attribute. */
export const LOCK_STATES = [
  'acquiring',
  'backing-off',
  'acquired',
  'escalated',
  'abandoned',
  'budget-spent',
  'released',
  'release-refused',
] as const;
export type LockState = (typeof LOCK_STATES)[number];
