import { parseAcquireRequest } from '../../policy/decisions/acquireRequest';
import { fastPathRequest, firstFastPathRequest } from '../../policy/decisions/firstAttempt';
import { TICKET_GRACE_MS } from '../../policy/decisions/waiting';

// The first attempt a fresh session's request check makes must ask the lock service what the session
// itself would ask at that moment: the same lease and, for its queue ticket, its whole budget.

describe("a fresh session's first fast-path request", () => {
  it('asks for the lease the request describes and a ticket as long as the whole budget, and a minute more', () => {
    const request = parseAcquireRequest({
      key: 'orders',
      requester: 'replica-a',
      ttlMs: 5_000,
      fairness: 'priority-based',
      priority: 3,
      budget: { maxTotalWaitMs: 90_000 },
    });
    expect(firstFastPathRequest(request)).toEqual({
      key: 'orders',
      requester: 'replica-a',
      ttlMs: 5_000,
      fairness: 'priority-based',
      priority: 3,
      queueTicketMs: Math.max(90_000, request.escalationTimeoutMs) + TICKET_GRACE_MS,
    });
  });

  it("a constraint's escalation limit shortens the ticket as it shortens the budget", () => {
    const request = parseAcquireRequest({
      key: 'orders',
      requester: 'replica-a',
      budget: { maxTotalWaitMs: 600_000 },
      escalationTimeoutMs: 1_000,
      constraints: ['escalate after 30s'],
    });
    expect(firstFastPathRequest(request).queueTicketMs).toBe(30_000 + TICKET_GRACE_MS);
  });

  it('names the owner only when the request has one', () => {
    const owned = parseAcquireRequest({ key: 'k', requester: 'r', owner: 'job-7' });
    expect(firstFastPathRequest(owned)).toMatchObject({ owner: 'job-7' });
    const plain = parseAcquireRequest({ key: 'k', requester: 'r' });
    expect(firstFastPathRequest(plain)).not.toHaveProperty('owner');
    expect(fastPathRequest(plain, 1_000)).toMatchObject({ queueTicketMs: 1_000 });
  });
});
