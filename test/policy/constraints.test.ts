import fc from 'fast-check';
import { parseAcquireRequest } from '../../policy/decisions/acquireRequest';
import {
  NO_CONSTRAINTS,
  parseConstraint,
  readConstraints,
  tightenBudget,
} from '../../policy/decisions/constraints';
import { InvalidLockRequestError } from '../../policy/errors';
import { guardDecision } from '../../policy/decisions/guardrails';
import type { RetryDecision } from '../../policy/decisions/retryDecision';

const escalate: RetryDecision = {
  decision: 'escalate',
  retry_after_ms: null,
  backoff_strategy: null,
  lease_renewal_instruction: null,
  starvation_risk: 'high',
  deadlock_detected: false,
  escalation_reason: 'stuck',
  explanation: 'It looks stuck.',
};

describe('operator constraints', () => {
  it("reads the seed's three examples and the other forms people write", () => {
    expect(parseConstraint('Must not exceed 3 retries')).toEqual({ kind: 'max-retries', n: 3 });
    expect(parseConstraint('Must escalate to on-call after 30s')).toEqual({
      kind: 'escalate-after',
      ms: 30_000,
      contact: null,
    });
    expect(parseConstraint('Must preserve FIFO ordering')).toEqual({ kind: 'fifo' });
    expect(parseConstraint('at most 5 retries.')).toEqual({ kind: 'max-retries', n: 5 });
    expect(parseConstraint('escalate to #Billing-oncall after 2 minutes of waiting')).toEqual({
      kind: 'escalate-after',
      ms: 120_000,
      contact: '#Billing-oncall',
    });
    expect(parseConstraint('Page dba-team@example.com.')).toEqual({
      kind: 'contact',
      contact: 'dba-team@example.com',
    });
    expect(parseConstraint('do not escalate before 1.5 s')).toEqual({
      kind: 'no-escalation-before',
      ms: 1_500,
    });
    expect(parseConstraint('Never escalate before 250ms')).toEqual({ kind: 'no-escalation-before', ms: 250 });
    expect(parseConstraint('be gentle with the database')).toBeNull();
    expect(parseConstraint('escalate after soon')).toBeNull();
  });

  it('adds them up with the tightest of each kind winning, and the budget tightened by them', () => {
    const read = readConstraints([
      'at most 5 retries',
      'not exceed 3 retries',
      'escalate after 1m',
      'escalate after 30s',
    ]);
    expect(read).toEqual({
      ok: true,
      rules: { ...NO_CONSTRAINTS, maxRetries: 3, escalateAfterMs: 30_000, advisory: [] },
    });
    const rules = read.ok ? read.rules : NO_CONSTRAINTS;
    expect(tightenBudget({ maxRetries: 20, maxTotalWaitMs: 60_000 }, rules)).toEqual({
      maxRetries: 3,
      maxTotalWaitMs: 30_000,
    });
    // A budget tighter than the constraints stays as it is.
    expect(tightenBudget({ maxRetries: 1, maxTotalWaitMs: 10_000 }, rules)).toEqual({
      maxRetries: 1,
      maxTotalWaitMs: 10_000,
    });
  });

  it('accepts a constraint in no known form as advisory (refused only when strict), and names whom to page', () => {
    const read = readConstraints([
      'at most 3 retries',
      'please hurry',
      'Must escalate to #payments-oncall after 30 s',
      'Comply with SOX change windows',
    ]);
    expect(read).toEqual({
      ok: true,
      rules: {
        ...NO_CONSTRAINTS,
        maxRetries: 3,
        escalateAfterMs: 30_000,
        escalationContact: '#payments-oncall',
        advisory: ['please hurry', 'Comply with SOX change windows'],
      },
    });
    expect(
      parseAcquireRequest({ key: 'k', requester: 'r', constraints: ['please hurry'] }).constraints,
    ).toEqual(['please hurry']);
    const strict = readConstraints(['at most 3 retries', 'please hurry'], { strict: true });
    expect(strict).toEqual({
      ok: false,
      problems: [
        {
          index: 1,
          message: expect.stringMatching(
            /^"please hurry" is not understood, and this worker enforces constraints strictly/,
          ),
        },
      ],
    });
  });

  it('refuses, at the request, constraints that contradict, naming them', () => {
    const refusal = (constraints: string[], extra: object = {}) => {
      try {
        parseAcquireRequest({ key: 'k', requester: 'r', constraints, ...extra });
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidLockRequestError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refusal(['escalate after 10s', 'do not escalate before 20s'])).toMatch(/contradicts/);
    expect(refusal(['preserve FIFO ordering'], { fairness: 'priority-based' })).toMatch(
      /fairness: is priority-based, but a constraint says "preserve FIFO ordering"/,
    );
  });

  it('holds back an escalation a decision asks for until "do not escalate before" has passed, within the budget', () => {
    const budget = { maxRetries: 20, maxTotalWaitMs: 60_000, maxBackoffMs: 5_000, baseBackoffMs: 100 };
    const rules = { noEscalationBeforeMs: 10_000, jitterSample: null };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 60_000 }),
        fc.integer({ min: 1, max: 30 }),
        (elapsedMs, attempts) => {
          const step = guardDecision(escalate, { attempts, elapsedMs }, budget, rules);
          const spent = attempts - 1 >= budget.maxRetries || budget.maxTotalWaitMs - elapsedMs < 50;
          if (spent)
            expect(step).toMatchObject({ kind: 'escalate', reason: expect.stringMatching(/^budget spent/) });
          else if (elapsedMs < 10_000) {
            expect(step.kind).toBe('sleep');
            if (step.kind === 'sleep')
              expect(step.sleepMs).toBeLessThanOrEqual(Math.max(50, 10_000 - elapsedMs));
          } else expect(step).toMatchObject({ kind: 'escalate', reason: 'stuck' });
        },
      ),
    );
  });
});
