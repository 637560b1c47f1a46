// The search attributes a session upserts: key, requester, state, review, escalation time.
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
  /**
   * When the session last escalated: what the starvation monitor counts a key's escalations by,
   * across every worker (a visibility count, not one process's memory).
   */
  lockEscalatedAt: defineSearchAttributeKey('LockEscalatedAt', 'DATETIME'),
} as const;
