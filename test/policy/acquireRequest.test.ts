import { parseAcquireRequest } from '../../policy/decisions/acquireRequest';
import { InvalidLockRequestError } from '../../policy/errors';

describe('parseAcquireRequest', () => {
  it('fills in the default TTL and budget from reviewed defaults', () => {
    expect(parseAcquireRequest({ key: 'k', requester: 'r' })).toEqual({
      key: 'k',
      requester: 'r',
      ttlMs: 30_000,
      fairness: 'FIFO',
      priority: 0,
      constraints: [],
      escalationTimeoutMs: 900_000,
      wakeOnRelease: true,
      notifyParent: false,
      budget: { maxRetries: 20, maxTotalWaitMs: 60_000, maxBackoffMs: 5_000, baseBackoffMs: 100 },
    });
  });

  it.each([
    [{ key: 'k', requester: 'r', extra: 1 }, /Unrecognized key: "extra"/],
    [{ key: 'k', requester: 'r', budget: { maxBackoffMs: 10 } }, /budget.maxBackoffMs: .*>=50/],
    [
      { key: 'k', requester: 'r', budget: { baseBackoffMs: 900, maxBackoffMs: 800 } },
      /budget.baseBackoffMs: must not exceed budget.maxBackoffMs/,
    ],
    [{ key: 'k', requester: 'r', ttlMs: 1.5 }, /ttlMs: must be a whole number/],
    [{ key: 'k' }, /requester: must be a string/],
  ])('rejects %j naming the field', (input, message) => {
    expect(() => parseAcquireRequest(input)).toThrow(InvalidLockRequestError);
    expect(() => parseAcquireRequest(input)).toThrow(message);
  });
});
