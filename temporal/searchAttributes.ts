import { defineSearchAttributeKey } from '@temporalio/common';

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
