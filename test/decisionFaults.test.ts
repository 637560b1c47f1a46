import { ApplicationFailure } from '@temporalio/common';
import pino from 'pino';
import { MODEL_RETRYABLE_ERRORS } from '../activities/anthropicCalls';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { createDecisionActivities } from '../activities/decisionActivities';
import { LATENCY_FLOOR_MS } from '../policy/constants';
import { guardDecision } from '../policy/decisions/guardrails';
import { type DecisionRecord, policyRecord } from '../policy/decisions/decisionPolicy';
import { baseInput, baseProgress, budget, VALID_DECISION as VALID } from '../devkit/decisionInputs';
import { type FakeAnswer, FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { FAKE_MODEL } from './support/runScenario';

// VALID without one of its fields.
const omit = (field: keyof typeof VALID) =>
  Object.fromEntries(Object.entries(VALID).filter(([name]) => name !== field));
const valid: FakeAnswer = { kind: 'tool', input: VALID };
type Expect =
  | { outcome: 'model'; requests: number; repaired: boolean }
  | { outcome: 'fallback'; requests: number; cause: string }
  | { outcome: 'retried-by-temporal'; requests: number; errorType: string; nextRetryDelayMs?: number };

const invalid = (patch: Record<string, unknown>): FakeAnswer => ({
  kind: 'tool',
  input: { ...VALID, ...patch },
});

const toolCall = (id: string, name: string, input: unknown) => ({ type: 'tool_use', id, name, input });
const TWO_CALLS: FakeAnswer = {
  kind: 'content',
  content: [
    toolCall('toolu_a', 'submit_retry_decision', { ...VALID, decision: 'abandon', retry_after_ms: null }),
    toolCall('toolu_b', 'submit_retry_decision', VALID),
  ],
  stopReason: 'tool_use',
};
const HTML_PAGE = `<html><head><title>502 Bad Gateway</title></head><body>${'upstream secret=hunter2 '.repeat(50)}</body></html>`;
const html200: FakeAnswer = { kind: 'raw', status: 200, contentType: 'text/html', body: HTML_PAGE };

const FAULTS: { fault: string; script: FakeAnswer[]; expect: Expect }[] = [
  { fault: 'a valid decision', script: [valid], expect: { outcome: 'model', requests: 1, repaired: false } },
  {
    fault: 'JSON wrapped in prose',
    script: [
      { kind: 'text', text: `Sure! Here is my answer: ${JSON.stringify(VALID)} Hope it helps.` },
      valid,
    ],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'markdown fences',
    script: [{ kind: 'text', text: '```json\n' + JSON.stringify(VALID) + '\n```' }, valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'unknown extra fields',
    script: [invalid({ fencing_token: '42', action: 'renew' }), valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'retry without retry_after_ms',
    script: [invalid({ retry_after_ms: null }), valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a field left out (escalation_reason), not sent as null',
    script: [{ kind: 'tool', input: omit('escalation_reason') }, valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a delay on an escalation (retry_after_ms not null)',
    script: [invalid({ decision: 'escalate', escalation_reason: 'stuck', retry_after_ms: 500 }), valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'an explanation of two sentences',
    script: [invalid({ explanation: 'The holder is busy. Wait a little.' }), valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'an unknown enum value',
    script: [invalid({ decision: 'steal' }), valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a negative number',
    script: [invalid({ retry_after_ms: -250 }), valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a fractional number',
    script: [invalid({ retry_after_ms: 12.5 }), valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a huge number',
    script: [invalid({ retry_after_ms: 9_000_000_000_000 })],
    expect: { outcome: 'model', requests: 1, repaired: false },
  },
  {
    fault: 'a number as a string',
    script: [invalid({ retry_after_ms: '500' }), valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'an empty content list',
    script: [{ kind: 'content', content: [], stopReason: 'end_turn' }, valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a refusal',
    script: [{ kind: 'content', content: [], stopReason: 'refusal' }, valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a truncated answer (max_tokens)',
    script: [{ kind: 'tool', input: { decision: 'retry' }, stopReason: 'max_tokens' }, valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'two tool calls (abandon, then retry)',
    script: [TWO_CALLS, valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a call of another tool',
    script: [
      { kind: 'content', content: [toolCall('toolu_x', 'renew_lease', VALID)], stopReason: 'tool_use' },
      valid,
    ],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a tool input that is not an object',
    script: [
      {
        kind: 'content',
        content: [toolCall('toolu_s', 'submit_retry_decision', 'retry')],
        stopReason: 'tool_use',
      },
      valid,
    ],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a 200 whose body is HTML',
    script: [html200, valid],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a 200 with content null',
    script: [
      {
        kind: 'raw',
        status: 200,
        contentType: 'application/json',
        body: '{"type":"message","content":null}',
      },
      valid,
    ],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a 200 JSON body with no content',
    script: [
      { kind: 'raw', status: 200, contentType: 'application/json', body: '{"type":"message","id":"m"}' },
      valid,
    ],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'a 200 whose JSON is cut short',
    script: [
      { kind: 'raw', status: 200, contentType: 'application/json', body: '{"content":[{"type":"tool_u' },
      valid,
    ],
    expect: { outcome: 'model', requests: 2, repaired: true },
  },
  {
    fault: 'invalid twice',
    script: [invalid({ extra: 1 }), invalid({ extra: 2 })],
    expect: { outcome: 'fallback', requests: 2, cause: 'invalid-after-repair' },
  },
  {
    fault: 'HTTP 400',
    script: [{ kind: 'http-error', status: 400, errorType: 'invalid_request_error' }],
    expect: { outcome: 'fallback', requests: 1, cause: 'model-request-rejected' },
  },
  {
    fault: 'HTTP 401',
    script: [{ kind: 'http-error', status: 401, errorType: 'authentication_error' }],
    expect: { outcome: 'fallback', requests: 1, cause: 'model-request-rejected' },
  },
  {
    fault: 'HTTP 429 with retry-after',
    script: [
      { kind: 'http-error', status: 429, errorType: 'rate_limit_error', headers: { 'retry-after': '7' } },
    ],
    expect: {
      outcome: 'retried-by-temporal',
      requests: 1,
      errorType: MODEL_RETRYABLE_ERRORS.rateLimited,
      nextRetryDelayMs: 7_000,
    },
  },
  {
    fault: 'HTTP 500',
    script: [{ kind: 'http-error', status: 500, errorType: 'api_error' }],
    expect: { outcome: 'retried-by-temporal', requests: 1, errorType: MODEL_RETRYABLE_ERRORS.unavailable },
  },
  {
    fault: 'HTTP 529 overloaded',
    script: [{ kind: 'http-error', status: 529, errorType: 'overloaded_error' }],
    expect: { outcome: 'retried-by-temporal', requests: 1, errorType: MODEL_RETRYABLE_ERRORS.overloaded },
  },
  {
    fault: 'a response slower than the timeout',
    script: [{ kind: 'slow', delayMs: 1_500, then: valid }],
    expect: { outcome: 'retried-by-temporal', requests: 1, errorType: MODEL_RETRYABLE_ERRORS.unavailable },
  },
  {
    fault: 'a dropped connection',
    script: [{ kind: 'drop' }],
    expect: { outcome: 'retried-by-temporal', requests: 1, errorType: MODEL_RETRYABLE_ERRORS.unavailable },
  },
];

describe('retry decision against a misbehaving Messages API', () => {
  const fake = new FakeMessagesApi();
  const outcomes: string[] = [];
  let decideRetry: ReturnType<typeof createDecisionActivities>['decideRetry'];

  beforeAll(async () => {
    await fake.start();
    // A short time-out, so the slow-answer fault times out quickly.
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: fake.baseURL, timeoutMs: 500 });
    ({ decideRetry } = createDecisionActivities({ decider, log: pino({ level: 'silent' }) }));
  });
  afterAll(async () => {
    await fake.stop();
    console.log(`fault classes (${FAULTS.length}):\n${outcomes.join('\n')}`);
  });

  it.each(FAULTS)('$fault → $expect.outcome', async ({ fault, script, expect: want }) => {
    fake.answer(...script);
    let record: DecisionRecord | undefined;
    if (want.outcome === 'retried-by-temporal') {
      const failure = await decideRetry(baseInput).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure).toMatchObject({ type: want.errorType, nonRetryable: false });
      if (want.nextRetryDelayMs)
        expect((failure as ApplicationFailure).nextRetryDelay).toBe(want.nextRetryDelayMs);
    } else {
      record = await decideRetry(baseInput);
      if (want.outcome === 'model')
        expect(record).toMatchObject({ provider: 'anthropic', repaired: want.repaired, fallbackCause: null });
      else expect(record).toMatchObject({ provider: 'policy', fallbackCause: want.cause });
    }
    expect(fake.requests).toHaveLength(want.requests);
    if (want.requests === 2) {
      // The repair request carries the validation error back to the model.
      expect(JSON.stringify(fake.requests[1]!.body.messages.at(-1))).toMatch(/not usable: /);
    }
    // Whatever happened, the sleep that follows is bounded: the model's answer, or the policy's. For
    // a retryable failure that is the record the workflow makes itself once Temporal gives up on the
    // activity (decideStep: policyRecord with cause model-unavailable).
    const decision = (record ?? policyRecord(baseInput, 'model-unavailable')).decision;
    const step = guardDecision(decision, baseProgress, budget);
    // This contention (budget left, a holder that renews) calls for a wait, whoever decided.
    if (step.kind !== 'sleep') throw new Error(`${fault}: expected a bounded sleep, got ${step.kind}`);
    expect(step.sleepMs).toBeGreaterThanOrEqual(LATENCY_FLOOR_MS);
    expect(step.sleepMs).toBeLessThanOrEqual(
      Math.min(budget.maxBackoffMs, budget.maxTotalWaitMs - baseProgress.elapsedMs),
    );
    outcomes.push(
      `  ${fault.padEnd(36)} → ${want.outcome}${'cause' in want ? ` (${want.cause})` : ''}${'errorType' in want ? ` (${want.errorType})` : ''}, ${want.requests} request(s), sleep ${step.sleepMs} ms`,
    );
  });

  it('two tool calls are an invalid answer, never the first one taken; the request asks for one call only', async () => {
    fake.answer(TWO_CALLS, TWO_CALLS);
    const record = await decideRetry(baseInput);
    expect(record).toMatchObject({
      provider: 'policy',
      fallbackCause: 'invalid-after-repair',
      fallbackDetail: '2 tool calls in the answer; exactly one submit_retry_decision call is expected',
    });
    // The policy answered: not the abandon the first call asked for.
    expect(record.decision.decision).toBe('retry');
    for (const request of fake.requests)
      expect(request.body).toMatchObject({
        tool_choice: { type: 'tool', name: 'submit_retry_decision', disable_parallel_tool_use: true },
      });
  });

  it('records no more than a short, redacted excerpt of a reply that is not a Messages response', async () => {
    fake.answer(html200, html200);
    const record = await decideRetry(baseInput);
    expect(record).toMatchObject({ provider: 'policy', fallbackCause: 'invalid-after-repair' });
    expect(record.fallbackDetail).toMatch(/^the reply (is not a Messages API response|could not be read)/);
    expect(record.fallbackDetail!.length).toBeLessThan(200);
    expect(record.fallbackDetail).not.toContain('hunter2');
  });
});

describe("the decision log line and the model's free text", () => {
  const fake = new FakeMessagesApi();
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  let decideRetry: ReturnType<typeof createDecisionActivities>['decideRetry'];

  beforeAll(async () => {
    await fake.start();
    // A short time-out, so the slow-answer fault times out quickly.
    const decider = createAnthropicDecider({ ...FAKE_MODEL, baseURL: fake.baseURL, timeoutMs: 500 });
    ({ decideRetry } = createDecisionActivities({ decider, log }));
  });
  afterAll(() => fake.stop());
  beforeEach(() => void (lines.length = 0));

  it('writes its one line when the model call throws, too', async () => {
    fake.answer({ kind: 'http-error', status: 503, errorType: 'api_error' });
    await expect(decideRetry(baseInput)).rejects.toMatchObject({ type: MODEL_RETRYABLE_ERRORS.unavailable });
    expect(lines).toEqual([
      expect.objectContaining({
        event: 'model-call',
        outcome: 'thrown',
        errorType: MODEL_RETRYABLE_ERRORS.unavailable,
      }),
    ]);
  });

  it('redacts the explanation before the record and the log see it', async () => {
    fake.answer({
      kind: 'tool',
      input: { ...VALID, explanation: 'Holder with token 8812 renews until 2026-12-02T10:00:00Z.' },
    });
    const record = await decideRetry(baseInput);
    expect(record.decision.explanation).toBe('Holder with token [token] renews until [time].');
    expect(lines).toEqual([expect.objectContaining({ event: 'model-call', repaired: false })]);
    expect(JSON.stringify(lines)).not.toMatch(/8812|2026-12-02T10/);
  });

  it('sends lease advice back to be corrected: the retry prompt asks for none', async () => {
    const advice = 'renew with fencing=8812 via redis://admin:hunter2@cache:6379';
    fake.answer(
      { kind: 'tool', input: { ...VALID, lease_renewal_instruction: advice } },
      { kind: 'tool', input: VALID },
    );
    const record = await decideRetry(baseInput);
    expect(record).toMatchObject({ provider: 'anthropic', repaired: true });
    expect(record.decision.lease_renewal_instruction).toBeNull();
    expect(JSON.stringify(fake.requests[1]!.body.messages)).toContain(
      'lease_renewal_instruction: must be null',
    );
    // The tool's schema asks for null; the prompt's prose never speaks of it.
    expect(JSON.stringify(fake.requests[0]!.body.tools)).toContain(
      '"lease_renewal_instruction":{"type":"null"}',
    );
    expect(fake.requests[0]!.body.system).not.toContain('lease_renewal_instruction');
    expect(JSON.stringify(lines)).not.toMatch(/8812|hunter2/);

    // Advice given twice: the policy answers, and the advice is nowhere.
    fake.answer({ kind: 'tool', input: { ...VALID, lease_renewal_instruction: advice } });
    const fallback = await decideRetry(baseInput);
    expect(fallback).toMatchObject({ provider: 'policy', fallbackCause: 'invalid-after-repair' });
    expect(JSON.stringify(fallback)).not.toMatch(/8812|hunter2/);
  });
});
