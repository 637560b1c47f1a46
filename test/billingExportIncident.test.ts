import { latencyThroughputVerdict, NO_EVIDENCE } from '../policy/postmortem/patchEvidence';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { readIncidentLog } from '../client/incidentLog';
import { writePostmortem } from '../client/postmortem';
import { validateBriefing } from '../policy/postmortem/validateBriefing';
import { acquire, release } from '../client/lockwardenClient';
import { SqliteFencedResource } from '../locks/sqliteFencedResource';
import { SqliteLockService } from '../locks/sqliteLockService';
import { activitySummaries } from '../devkit/history';
import { sessionFixture, silentLog, withWorker } from './support/temporalFixture';
import { startWorkerProcess, stopWorkerProcess } from './support/workerProcess';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';
import { withDraftingModelWorker } from './support/modelWorker';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';

// The constructed incident of the boundary document: replica A holds the nightly export lock and is
// paused past its lease (its worker process is stopped with SIGSTOP, as a long GC pause or a frozen
// VM would); replica B takes the lock and writes its invoice batch; A wakes up, tries to renew and to
// write with its old token. With fencing, exactly one batch exists and A's history says why.

const GATES_YAML = `canaryPercent: [5, 25, 50, 100]
soakMinutes: 30
abort:
  leaseLostRate: 0.001
  staleWriteRefusalsPerHour: 0
  p99WaitMs: 2000
  errorBudgetBurn: 0.02
windowMinutes: 10
rollback:
  deployment: lockwarden
  previousBuildId: 0.1.0
`;
// The evidence of a real patch: the keeper fix (895952a..b33ba17), with the PostgreSQL fault
// campaign before it (3 writes after their deadline) and after it, the contention bench and the
// clean-clone CI's count, all as the repository's bench/results/ holds them.
const PATCH = '895952a..b33ba17';
const RESULTS = path.join(__dirname, '..', 'bench', 'results');
function realEvidence(): string[] {
  // The postgres campaign before its fix (run at 154aeac) and after, the contention bench, CI's count.
  return [
    `before=${path.join(RESULTS, 'campaign-postgres-seed2026-at-154aeac.json')}`,
    `after=${path.join(RESULTS, 'campaign-postgres-seed2026.json')}`,
    path.join(RESULTS, 'contention-sqlite.json'),
    path.join(RESULTS, 'ci-summary.json'),
  ];
}

// What the fake model drafts for the incident: every section, both threads, abort criteria with numbers.
const INCIDENT_DRAFT = {
  subject: '[billing nightly export] SEV-2 holder paused past its lease: patch ready for canary',
  executive_context:
    'Dana Lee, the nightly export ran on two replicas in one window; one invoice batch exists and the paused replica was turned away.',
  concurrency_anomaly_analysis: [
    "Times are on the lock service's clock.",
    '- T+0.000 s Thread A takes the lock and is paused past its lease.',
    '- T+2.100 s Thread B takes the next number, writes its batch, then lets go.',
    '- T+5.000 s Thread A wakes having lost its hold; its write with the older number is refused.',
  ].join('\n'),
  patch_validation_evidence: `The incident is replayed by an integration test against the real lock service. ${latencyThroughputVerdict(NO_EVIDENCE)}`,
  deployment_checklist: [
    'Canary 5%, 25%, 50%, 100%, 30 minutes each.',
    'Abort if lost holds exceed 0.1% of acquisitions over 10 min (lockwarden_leases_lost_total).',
    'Abort if the p99 acquisition wait exceeds 2000 ms over 10 min (lockwarden_acquisition_wait_seconds).',
    'Rollback: temporal worker deployment set-current-version --deployment-name lockwarden --build-id 0.1.0 --yes',
  ].join('\n'),
};

describe('the billing-export incident, replayed', () => {
  const fixture = sessionFixture();

  it('refuses the paused replica: its renewal is denied, its stale write is refused, one invoice batch exists', async () => {
    const lockFile = freshSqlitePath();
    // The key as the job names it: this run's sessions are told apart by their start (since).
    const key = 'billing/nightly-export';
    const since = new Date(Date.now() - 1_000);
    const locks = new SqliteLockService({ path: lockFile });
    const invoices = new Database(freshSqlitePath());
    invoices.exec('CREATE TABLE invoice_batches (batch TEXT NOT NULL, token TEXT NOT NULL)');
    const fenced = new SqliteFencedResource(invoices);
    const writeBatch = (batch: string, token: string) =>
      fenced.write('invoices', token, (db) =>
        db.prepare('INSERT INTO invoice_batches VALUES (?, ?)').run(batch, token),
      );
    const queueA = unique('replica-a');
    const workerA = startWorkerProcess(lockFile, queueA);
    try {
      // 02:00 — replica A acquires the export lock (token n).
      const a = await acquire(
        fixture.env.client,
        { key, requester: 'replica-a', ttlMs: 2_000 },
        { taskQueue: queueA },
      );
      const tokenA = a.lease.token;

      // A's host freezes before the export finishes, and stays frozen past its lease.
      workerA.kill('SIGSTOP');
      await waitFor(
        "A's lease to expire on the service clock",
        async () => (await locks.inspect(key)).holder === null,
        15_000,
      );

      // Replica B acquires (token n+1) and writes its invoice batch through the fenced resource.
      await withWorker(fixture.env, { locks, log: silentLog }, async (queueB) => {
        const b = await acquire(
          fixture.env.client,
          { key, requester: 'replica-b', ttlMs: 30_000 },
          { taskQueue: queueB },
        );
        expect(BigInt(b.lease.token)).toBe(BigInt(tokenA) + 1n);
        expect(await writeBatch('batch-from-B', b.lease.token)).toMatchObject({ accepted: true });

        // A resumes: its session tries to renew with token n and is told the lease is lost.
        workerA.kill('SIGCONT');
        const outcomeA = await a.session.result();
        expect(outcomeA).toMatchObject({
          status: 'lease-lost',
          reason: expect.stringContaining(`token ${b.lease.token} for replica-b, not token ${tokenA}`),
        });
        // A's export code, unaware, writes with its old token: refused.
        expect(await writeBatch('batch-from-A', tokenA)).toEqual({
          accepted: false,
          newestToken: b.lease.token,
        });

        // The service still shows B, with its own token and deadline: A renewed nothing.
        expect(await locks.inspect(key)).toMatchObject({
          holder: 'replica-b',
          token: b.lease.token,
          leaseUntil: b.lease.leaseUntil,
        });
        expect(await release(fixture.env.client, b.lease)).toMatchObject({ ok: true });
      });

      expect(invoices.prepare('SELECT batch, token FROM invoice_batches').all()).toEqual([
        { batch: 'batch-from-B', token: String(BigInt(tokenA) + 1n) },
      ]);
      // The history shows why: the keeper of token n, whose renewal ended the hold as lease-lost.
      const history = await fixture.env.client.workflow.getHandle(a.session.workflowId).fetchHistory();
      expect(activitySummaries(history).filter((s) => s.startsWith(`keep token ${tokenA}:`))).toHaveLength(1);

      // The post-mortem briefing, from the key's own sessions and the resource's write log.
      const tokenB = String(BigInt(tokenA) + 1n);
      const writes = await fenced.attempts('invoices');
      await waitFor('both sessions in visibility', async () => {
        const events = await readIncidentLog({ client: fixture.env.client, key, writes, since });
        return events.filter((e) => e.kind === 'ended').length === 2;
      });
      const gatesFile = freshSqlitePath().replace(/\.sqlite$/, '.yaml');
      fs.writeFileSync(gatesFile, GATES_YAML);
      // What both lanes are given about the incident (the template's run adds patch and evidence).
      const briefFor = {
        firm: 'Northwind Advisory',
        stakeholder: 'Dana Lee',
        job: 'billing nightly export',
        gates: gatesFile,
        since: since.toISOString(),
      };
      const postmortem = await withWorker(fixture.env, { locks, log: silentLog }, (taskQueue) =>
        writePostmortem(
          fixture.env.client,
          key,
          { ...briefFor, evidence: realEvidence(), patch: PATCH, owner: 'Sam Okafor' },
          { taskQueue, writes },
        ),
      );
      const { timeline, result } = postmortem;
      expect(timeline.threads).toEqual([
        { label: 'Thread A', session: 'replica-a' },
        { label: 'Thread B', session: 'replica-b' },
      ]);
      expect(timeline.mechanism).toMatchObject({
        kind: 'paused-past-lease',
        staleToken: tokenA,
        nextToken: tokenB,
      });
      const order = (text: string) => timeline.steps.findIndex((step) => step.text.startsWith(text));
      const steps = [
        `Thread A (replica-a) takes token ${tokenA}`,
        `Thread B (replica-b) takes token ${tokenB}`,
        `Thread B (replica-b) writes to invoices with token ${tokenB}: accepted`,
        `Thread A (replica-a) tries to keep token ${tokenA}: refused`,
        `Thread A (replica-a) writes to invoices with token ${tokenA}: refused, the newest accepted is token ${tokenB}`,
      ].map(order);
      expect(steps.every((i) => i >= 0)).toBe(true);
      expect([...steps].sort((x, y) => x - y)).toEqual(steps);
      expect(result).toMatchObject({ lane: 'template', fallbackCause: null });
      expect(validateBriefing(result.briefing, timeline, { modelDrafted: false })).toEqual([]);
      expect(postmortem.words).toBeLessThanOrEqual(650);
      expect(postmortem.output).toMatch(
        /^Subject: \[billing nightly export\] SEV-2 holder paused past its lease: patch ready for canary\n/,
      );
      // The model lane on the same incident: the draft is made on a model worker's queue, from facts
      // the draft gate admits (a session that let go included), and the model's draft is used.
      const model = await new FakeMessagesApi().start();
      try {
        model.answer({
          kind: 'content',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'submit_briefing', input: INCIDENT_DRAFT }],
          stopReason: 'tool_use',
        });
        const drafted = await withDraftingModelWorker(fixture.env, model, (modelTaskQueue) =>
          withWorker(fixture.env, { locks, log: silentLog, modelTaskQueue }, (taskQueue) =>
            writePostmortem(fixture.env.client, key, briefFor, { taskQueue, modelTaskQueue, writes }),
          ),
        );
        expect(drafted.result).toMatchObject({ lane: 'model', fallbackCause: null });
        expect(drafted.result.briefing.subject).toBe(INCIDENT_DRAFT.subject);
        const sent = JSON.stringify(model.requests[0]!.body.messages);
        expect(sent).toContain('Thread B (replica-b) ends by letting go');
        expect(sent).toContain('Thread A (replica-a) ends having lost its hold');
      } finally {
        await model.stop();
      }

      // Kept for docs/postmortems.md's sample and for a person to read.
      fs.mkdirSync(path.join(__dirname, '..', '.data'), { recursive: true });
      fs.writeFileSync(path.join(__dirname, '..', '.data', 'postmortem-sample.txt'), postmortem.output);
      fs.writeFileSync(
        path.join(__dirname, '..', '.data', 'postmortem-sample.json'),
        JSON.stringify({ words: postmortem.words }),
      );
    } finally {
      workerA.kill('SIGCONT');
      await stopWorkerProcess(workerA, 'SIGTERM');
      invoices.close();
      await locks.close();
    }
  }, 90_000);
});
