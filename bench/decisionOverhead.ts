// What a model-backed retry decision costs on the harness side: the decision activity (prompt,
// real SDK call, strict parse, guardrails, log line) against the loopback fake of the Messages API,
// compared in the same run with a bare HTTP POST to the same fake (the floor any client pays) and
// with the deterministic policy alone. Median of N calls each.
//   npx tsx bench/decisionOverhead.ts [calls]
import pino from 'pino';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { createDecisionActivities } from '../activities/decisionActivities';
import { baseInput, VALID_DECISION as DECISION } from '../devkit/decisionInputs';
import { median, timeEach } from './stats';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';

const CALLS = Number(process.argv[2] ?? 200);

async function medianOf(op: () => Promise<unknown>): Promise<number> {
  return median(await timeEach(op, CALLS, 20));
}

async function main(): Promise<void> {
  const fake = await new FakeMessagesApi().start();
  fake.answer({ kind: 'tool', input: DECISION });
  const log = pino({ level: 'silent' });
  const decider = createAnthropicDecider({
    apiKey: 'bench',
    baseURL: fake.baseURL,
    model: 'claude-haiku-4-5',
    largeModel: 'claude-sonnet-4-5',
    timeoutMs: 5_000,
    maxTokens: 512,
  });
  const withModel = createDecisionActivities({ decider, log });
  const policyOnly = createDecisionActivities({ decider: null, log });
  const body = JSON.stringify({
    model: 'claude-haiku-4-5',
    max_tokens: 512,
    messages: [{ role: 'user', content: 'x' }],
  });

  const rawPostMs = await medianOf(async () => {
    const res = await fetch(`${fake.baseURL}/v1/messages`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    await res.json();
  });
  const modelMs = await medianOf(() => withModel.decideRetry(baseInput));
  const policyMs = await medianOf(() => policyOnly.decideRetry(baseInput));
  await fake.stop();

  console.log(`decision activity, median of ${CALLS} calls (after 20 warm-up), loopback fake Messages API:`);
  console.log(`  bare HTTP POST to the fake (baseline)   ${rawPostMs.toFixed(3)} ms`);
  console.log(
    `  decideRetry with the model path         ${modelMs.toFixed(3)} ms   ${(modelMs / rawPostMs).toFixed(2)}x the baseline, +${(modelMs - rawPostMs).toFixed(3)} ms`,
  );
  console.log(
    `  decideRetry with the policy only        ${policyMs.toFixed(3)} ms   ${(policyMs / rawPostMs).toFixed(2)}x the baseline`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
