import { createAnthropicDrafter } from '../activities/anthropicDrafter';
import { type BriefingFacts, renderBriefing } from '../policy/postmortem/briefing';
import { latencyThroughputVerdict, NO_EVIDENCE } from '../policy/postmortem/patchEvidence';
import { buildTimeline } from '../policy/postmortem/timeline';
import type { BriefingPlacement, BriefingResult, postmortemBriefing } from '../workflows/postmortemBriefing';
import { withDraftingModelWorker } from './support/modelWorker';
import { type FakeAnswer, FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { GATES, PAUSED_PAST_LEASE } from './support/incidents';
import { FAKE_MODEL } from './support/runScenario';
import { sessionFixture, silentLog, unique, withWorker } from './support/temporalFixture';

// The model lane of the post-mortem briefing, through the postmortemBriefing workflow on a real dev
// server and the real SDK against the fake Messages API: a valid draft is used; a draft the validator
// refuses falls back to the template with its cause.

const FACTS: BriefingFacts = {
  firm: 'Northwind Advisory',
  stakeholder: 'Dana Lee',
  job: 'billing nightly export',
  timeline: buildTimeline('billing/nightly-export', PAUSED_PAST_LEASE),
  evidence: NO_EVIDENCE,
  gates: GATES,
};

const VALID_DRAFT = {
  subject: '[billing nightly export] SEV-2 holder paused past its lease: patch ready for canary',
  executive_context:
    'Dana Lee, the nightly export ran twice in the same window; the token check kept a single batch.',
  concurrency_anomaly_analysis: [
    "Times are on the lock service's clock.",
    '- T+0.000 s Thread A takes the lock and goes silent past its lease.',
    '- T+2.100 s Thread B takes the next token and writes its batch.',
    '- T+5.000 s Thread A wakes; its attempt to keep the lock is refused, and its write is turned away.',
  ].join('\n'),
  patch_validation_evidence: `The incident is replayed by an integration test against the real lock service. ${latencyThroughputVerdict(NO_EVIDENCE)}`,
  deployment_checklist: [
    'Canary 1%, 10%, 50%, 100%, 30 minutes each.',
    'Abort if the p99 acquisition wait exceeds 2000 ms over 10 min (lockwarden_acquisition_wait_seconds).',
    'Abort if lost holds exceed 0.1% of acquisitions over 10 min (lockwarden_leases_lost_total).',
    'Rollback: temporal worker deployment set-current-version --deployment-name lockwarden --build-id 0.1.0 --yes',
  ].join('\n'),
};
const draft = (patch: Record<string, unknown>, drop?: string): FakeAnswer => {
  const input: Record<string, unknown> = { ...VALID_DRAFT, ...patch };
  if (drop) delete input[drop];
  return {
    kind: 'content',
    content: [{ type: 'tool_use', id: 'toolu_1', name: 'submit_briefing', input }],
    stopReason: 'tool_use',
  };
};

describe('post-mortem briefing: the model lane', () => {
  const fixture = sessionFixture();
  const fake = new FakeMessagesApi();

  beforeAll(() => fake.start());
  afterAll(() => fake.stop());

  const briefWith = (...script: FakeAnswer[]) => {
    fake.answer(...script);
    const drafter = createAnthropicDrafter({ ...FAKE_MODEL, baseURL: fake.baseURL });
    return withWorker(fixture.env, { locks: fixture.locks, log: silentLog, drafter }, (taskQueue) =>
      fixture.env.client.workflow.execute<(facts: BriefingFacts) => Promise<BriefingResult>>(
        'postmortemBriefing',
        {
          taskQueue,
          workflowId: unique('postmortem'),
          args: [FACTS],
        },
      ),
    );
  };

  it('uses a valid draft, and the model saw only the redacted timeline', async () => {
    const result = await briefWith(draft({}));
    expect(result).toMatchObject({ lane: 'model', fallbackCause: null, fallbackDetail: null });
    expect(result.briefing.subject).toBe(VALID_DRAFT.subject);
    const sent = fake.requests[0]!.body as unknown as {
      messages: { content: string }[];
      tool_choice: unknown;
    };
    expect(sent.tool_choice).toEqual({
      type: 'tool',
      name: 'submit_briefing',
      disable_parallel_tool_use: true,
    });
    const facts = sent.messages[0]!.content;
    expect(facts).toContain('Thread A (replica-a) tries to keep token [token]: refused');
    expect(facts).not.toMatch(/token [0-9]/);
  });

  it("validates the template's briefing too, before it is written: one that fails is refused, named", async () => {
    // Facts a client built by hand, their gates without a rollback target (the schema refuses those).
    const { rollback: _none, ...gates } = FACTS.gates;
    const run = withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, (taskQueue) =>
      fixture.env.client.workflow.execute<(facts: BriefingFacts) => Promise<BriefingResult>>(
        'postmortemBriefing',
        {
          taskQueue,
          workflowId: unique('postmortem'),
          args: [{ ...FACTS, gates }],
        },
      ),
    );
    await expect(run).rejects.toMatchObject({
      cause: {
        type: 'InvalidBriefing',
        message: expect.stringContaining('self-review: the checklist names no rollback target'),
      },
    });
  });

  it("masks the operator's tenants in the facts sent and in the draft that comes back", async () => {
    fake.answer(
      draft({
        executive_context:
          'Dana Lee, the Northwind Advisory export ran twice in the same window; the token check kept a single batch.',
      }),
    );
    const drafter = createAnthropicDrafter({
      ...FAKE_MODEL,
      baseURL: fake.baseURL,
      sensitiveTenants: ['Northwind'],
    });
    const result = await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, drafter },
      (taskQueue) =>
        fixture.env.client.workflow.execute<(facts: BriefingFacts) => Promise<BriefingResult>>(
          'postmortemBriefing',
          {
            taskQueue,
            workflowId: unique('postmortem'),
            args: [FACTS],
          },
        ),
    );
    expect(JSON.stringify(fake.requests[0]!.body)).not.toContain('Northwind');
    expect(result.lane).toBe('model');
    expect(JSON.stringify(result.briefing)).toContain('the [tenant] Advisory export ran twice');
  });

  it("drafts on the model worker's queue when told to; the template answers when no model worker takes it", async () => {
    const brief = (placement: BriefingPlacement) =>
      withWorker(fixture.env, { locks: fixture.locks, log: silentLog }, (taskQueue) =>
        fixture.env.client.workflow.execute<typeof postmortemBriefing>('postmortemBriefing', {
          taskQueue,
          workflowId: unique('postmortem'),
          args: [FACTS, placement],
        }),
      );
    const unserved = await brief({ modelTaskQueue: unique('no-model-worker') });
    expect(unserved).toMatchObject({ lane: 'template', fallbackCause: 'model-unavailable' });
    expect(unserved.briefing).toEqual(renderBriefing(FACTS));

    fake.answer(draft({}));
    const served = await withDraftingModelWorker(fixture.env, fake, (modelTaskQueue) =>
      brief({ modelTaskQueue }),
    );
    expect(served).toMatchObject({ lane: 'model', fallbackCause: null });
  });

  it.each([
    ['a 700-word draft', draft({ executive_context: 'word '.repeat(700) }), 'length'],
    ['a draft missing a section', draft({}, 'deployment_checklist'), 'invalid-draft'],
    ['a draft with an unknown field', draft({ next_steps: 'more' }), 'invalid-draft'],
    [
      'a draft that asks to renew a lease',
      draft({ executive_context: 'Operators should renew the lease by hand when the export runs long.' }),
      'draft-gate',
    ],
    [
      'a draft that does not name Thread B',
      draft({ concurrency_anomaly_analysis: 'Thread A paused.' }),
      'threads',
    ],
  ])('falls back to the template on %s, recording why', async (_, answer, cause) => {
    const result = await briefWith(answer);
    expect(result).toMatchObject({ lane: 'template', fallbackCause: cause });
    expect(result.briefing).toEqual(renderBriefing(FACTS));
  });
});
