import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { mapConcurrently } from '../client/concurrency';
import { acquire, release } from '../client/lockwardenClient';
import { VALID_DECISION } from '../devkit/decisionInputs';
import { FakeMessagesApi } from '../devkit/fakeMessagesApi';
import { freshSqlitePath } from '../devkit/tempFiles';
import { connectTestEnv, TEMPORAL_ADDRESS, unique } from './support/temporalFixture';
import { freePort } from '../devkit/freePort';
import { PrometheusServer } from './support/prometheusServer';
import { stopWorkerProcess } from './support/workerProcess';
import { waitFor } from './support/waitFor';

// compose's dashboard, every panel of it, against a real Prometheus (Debian's) scraping a real lock
// worker and a real model worker (their own processes, as compose runs them) under contention: each
// query returns data, and names only metrics the workers serve.
const DASHBOARD = path.join(__dirname, '..', 'compose', 'grafana', 'lockwarden.json');

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string }[];
}

// Starts a worker role's process and resolves once it polls (its "polling" log line).
async function startRole(script: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: path.join(__dirname, '..'),
    env: { ...process.env, TEMPORAL_ADDRESS, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await waitFor(`${script} polling`, async () => out.includes('polling'), 60_000);
  return child;
}

describe('the Grafana dashboard', () => {
  const panels = (JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }).panels.filter(
    (p) => p.type !== 'row',
  );

  it('every panel returns data from a real Prometheus scraping real workers under contention', async () => {
    const [lockMetrics, lockSdk, modelMetrics, modelSdk] = await Promise.all(
      [1, 2, 3, 4].map(() => freePort()),
    );
    const taskQueue = unique('dashboard');
    const modelTaskQueue = unique('dashboard-model');
    // The model's first answer fails validation and is repaired; every later one is valid at once.
    const model = await new FakeMessagesApi().start();
    model.answer({ kind: 'text', text: 'not a decision' }, { kind: 'tool', input: VALID_DECISION });
    const prometheus = new PrometheusServer({
      'lockwarden-worker': [`127.0.0.1:${lockMetrics}`],
      'lockwarden-model-worker': [`127.0.0.1:${modelMetrics}`],
    });
    await prometheus.start();
    const env = await connectTestEnv();
    const workers: ChildProcess[] = [];
    try {
      workers.push(
        await startRole('worker/modelMain.ts', {
          LOCKWARDEN_MODEL_TASK_QUEUE: modelTaskQueue,
          ANTHROPIC_API_KEY: 'fake',
          ANTHROPIC_BASE_URL: model.baseURL,
          METRICS_PORT: String(modelMetrics),
          LOCKWARDEN_SDK_METRICS_PORT: String(modelSdk),
        }),
        await startRole('worker/main.ts', {
          LOCKWARDEN_TASK_QUEUE: taskQueue,
          LOCKWARDEN_MODEL_TASK_QUEUE: modelTaskQueue,
          LOCK_SERVICE_URL: `sqlite:${freshSqlitePath()}`,
          ANTHROPIC_API_KEY: '',
          METRICS_PORT: String(lockMetrics),
          LOCKWARDEN_SDK_METRICS_PORT: String(lockSdk),
        }),
      );
      // Contention: twelve requesters on two keys, each holding long enough for its keeper to renew;
      // in two waves, so that a series born in the first grows in the second (a rate needs both).
      const requesters = Array.from({ length: 12 }, (_, i) => `r${i}`);
      const keys = [unique('dashboard-a'), unique('dashboard-b')];
      for (const wave of [1, 2]) {
        await mapConcurrently(requesters, 12, async (requester) => {
          const key = keys[Number(requester.slice(1)) % 2]!;
          const held = await acquire(env.client, { key, requester, ttlMs: 3_000 }, { taskQueue });
          await delay(1_500);
          await release(env.client, held.lease);
        });
        if (wave === 1) await delay(2_500);
      }
      // Every series scraped at least twice since the last hold.
      await delay(3_000);

      const served = (await (await fetch(`http://127.0.0.1:${lockMetrics}/metrics`)).text()).concat(
        await (await fetch(`http://127.0.0.1:${modelMetrics}/metrics`)).text(),
      );
      const empty: string[] = [];
      for (const panel of panels)
        for (const { expr } of panel.targets ?? []) {
          // Every metric a query names is one the workers serve (a misspelt name would be a quiet panel).
          for (const name of expr.match(/\b(?:lockwarden|temporal)_[a-z_]+/g) ?? [])
            expect(served).toMatch(new RegExp(`^(# TYPE )?${name.replace(/_(bucket|count|sum)$/, '')}`, 'm'));
          const series = await prometheus.query(expr);
          const numbers = series.filter((s) => Number.isFinite(Number(s.value[1])));
          if (numbers.length === 0) empty.push(`${panel.title}: ${expr}`);
        }
      expect(empty).toEqual([]);
      // The alert rules load in a real Prometheus, too, and evaluate without error.
      const rules = await prometheus.rules();
      expect(rules.length).toBeGreaterThanOrEqual(9);
      expect(rules.filter((r) => r.health !== 'ok')).toEqual([]);
    } finally {
      for (const worker of workers) await stopWorkerProcess(worker, 'SIGTERM');
      await prometheus.stop();
      await model.stop();
      await env.teardown();
    }
  }, 180_000);
});
