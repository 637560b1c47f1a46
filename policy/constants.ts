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
  /** Set on the sessions of a key that keeps escalating: flagged for deadlock review. */
  lockReview: defineSearchAttributeKey('LockReview', 'BOOL'),
} as const;

/** Where a session stands, as shown in its LockState search attribute. */
export const LOCK_STATES = [
  'acquiring',
  'backing-off',
  'acquired',
  'escalated',
  'abandoned',
  'holding',
  'lease-lost',
  'halted',
  'budget-spent',
  'released',
  'release-refused',
] as const;
export type LockState = (typeof LOCK_STATES)[number];

/** The workflow id of the session of one requester on one key: at most one runs at a time. */
export function acquisitionWorkflowId(key: string, requester: string): string {
  return `lock/${key}/${requester}`;
}
