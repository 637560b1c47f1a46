import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAnthropicDecider } from '../activities/anthropicDecider';
import { FileEscalationStore } from '../activities/escalationStore';
import { FakeMessagesApi } from '../test/support/fakeMessagesApi';
import { SCENARIOS } from '../test/support/scenarios';
import {
  connectTestEnv,
  freshSqliteLockService,
  silentLog,
  TEMPORAL_ADDRESS,
  withWorker,
} from '../test/support/temporalFixture';

const FAKE_MODEL = {
  apiKey: 'fake',
  model: 'claude-haiku-4-5',
  largeModel: 'claude-sonnet-4-5',
  timeoutMs: 5_000,
  maxTokens: 512,
};

// Runs each scenario against the dev server and writes the histories it names to
// test/histories/<name>.json, which the replay suite replays on every run. After an intended
// workflow change (made compatible with patched()), keep the old files and record new ones:
//   npx tsx scripts/recordHistories.ts [scenario-name ...]
async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const outDir = path.join(__dirname, '..', 'test', 'histories');
  fs.mkdirSync(outDir, { recursive: true });
  const temporal = execFileSync('bash', [path.join(__dirname, 'install-temporal.sh')])
    .toString('utf8')
    .trim();
  const env = await connectTestEnv();
  const locks = freshSqliteLockService();
  const escalations = new FileEscalationStore(
    path.join(os.tmpdir(), `lockwarden-record-${Date.now()}.jsonl`),
  );
  try {
    for (const scenario of SCENARIOS.filter((s) => !wanted.length || wanted.includes(s.name))) {
      const fake = scenario.model ? await new FakeMessagesApi().start() : null;
      if (fake && scenario.model) fake.answer(...scenario.model);
      const decider = fake ? createAnthropicDecider({ ...FAKE_MODEL, baseURL: fake.baseURL }) : null;
      const recorded = await withWorker(env, { locks, log: silentLog, decider, escalations }, (taskQueue) =>
        scenario.run(env.client, taskQueue, locks, Date.now().toString(36)),
      ).finally(() => fake?.stop());
      for (const [name, workflowId] of Object.entries(recorded)) {
        // The CLI's proto-JSON is the format replay reads (the SDK's historyToJSON trips over the two
        // protobufjs copies in its dependency tree).
        const json = execFileSync(temporal, [
          'workflow',
          'show',
          '--address',
          TEMPORAL_ADDRESS,
          '-w',
          workflowId,
          '-o',
          'json',
        ]);
        const events = (JSON.parse(json.toString('utf8')) as { events: unknown[] }).events.length;
        fs.writeFileSync(path.join(outDir, `${name}.json`), json);
        console.log(`recorded ${name} (${events} events)`);
      }
    }
  } finally {
    await locks.close();
    await env.teardown();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
