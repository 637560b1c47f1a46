import pino from 'pino';
import Database from 'better-sqlite3';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { createDecisionActivities } from '../activities/decisionActivities';
import { SqliteLockService } from '../locks/sqliteLockService';
import { parseAcquireRequest } from '../policy/decisions/acquireRequest';
import { buildDecisionContext } from '../policy/decisions/decisionContext';
import { baseInput } from '../devkit/decisionInputs';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { freshSqlitePath } from '../devkit/tempFiles';

const CANARY_ENV = {
  LOCK_SERVICE_URL: 'postgres://lockwarden:CANARY-PG-PASSWORD-7f3a@db.internal:5432/locks',
  REDIS_PASSWORD: 'CANARY-REDIS-PASSWORD-91bc',
  AWS_SECRET_ACCESS_KEY: 'CANARY-AWS-SECRET-44de',
};
const CANARY_API_KEY = 'sk-ant-CANARY-API-KEY-0c1d';

describe('what reaches the model', () => {
  const fake = new FakeMessagesApi();
  const saved = { ...process.env };
  beforeAll(() => fake.start());
  afterAll(async () => {
    process.env = saved;
    await fake.stop();
  });

  it('carries no token, absolute deadline, credential or environment secret in any request body', async () => {
    Object.assign(process.env, CANARY_ENV);
    // A lock record whose token and deadline are canaries: seed the counter so the next token is one.
    const file = freshSqlitePath();
    const locks = new SqliteLockService({ path: file });
    await locks.inspect('billing/nightly-export');
    const db = new Database(file);
    db.prepare(
      "INSERT INTO lock_leases (key, last_token) VALUES ('billing/nightly-export', 99887766554432)",
    ).run();
    db.close();
    const held = await locks.tryAcquire({
      key: 'billing/nightly-export',
      requester: 'replica-a',
      ttlMs: 600_000,
    });
    if (!held.granted) throw new Error('setup: expected a grant');
    expect(held.lease.token).toBe('99887766554433');
    const attempt = await locks.tryAcquire({
      key: 'billing/nightly-export',
      requester: 'replica-b',
      ttlMs: 30_000,
    });
    if (attempt.granted) throw new Error('setup: expected a denial');
    await locks.close();

    const request = parseAcquireRequest({
      key: 'billing/nightly-export',
      requester: 'replica-b',
      constraints: ['escalate to #billing-oncall after 30 s'],
    });
    const context = buildDecisionContext({
      unchangedDenials: 1,
      request,
      denial: attempt.denial,
      attempts: 3,
      elapsedMs: 4_000,
      recentDecisions: [],
      waitForEdges: [],
      parks: false,
    });
    fake.answer(
      { kind: 'tool', input: { extra: 'field' } },
      { kind: 'tool', input: { ...baseInput.context, nonsense: true } },
    );
    const decider = createAnthropicDecider({
      apiKey: CANARY_API_KEY,
      baseURL: fake.baseURL,
      model: 'claude-haiku-4-5',
      largeModel: 'claude-sonnet-4-5',
      timeoutMs: 2_000,
      maxTokens: 512,
    });
    await createDecisionActivities({ decider, log: pino({ level: 'silent' }) }).decideRetry({
      ...baseInput,
      context,
    });

    expect(fake.requests).toHaveLength(2); // the first request and its repair
    const forbidden = [
      held.lease.token,
      String(held.lease.leaseUntil),
      String(attempt.denial.holderLeaseUntil),
      CANARY_API_KEY,
      ...Object.values(CANARY_ENV),
      'CANARY-PG-PASSWORD',
    ];
    for (const { rawBody } of fake.requests) {
      expect(rawBody).toContain('billing/nightly-export'); // the lock name does go in: it is the subject
      for (const secret of forbidden) expect(rawBody).not.toContain(secret);
    }
    // The API key goes where it belongs, in a header (this SDK version sends it as a bearer token).
    const { headers } = fake.requests[0]!;
    expect([headers['x-api-key'], headers.authorization]).toContainEqual(
      expect.stringContaining(CANARY_API_KEY),
    );
  });
});
