import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createAnthropicDecider } from '../activities/anthropicDecider';
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

// Runs each scenario against the dev server and writes its history to test/histories/<name>.json,
// which the replay suite replays on every run. Re-record after an intended workflow change:
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
  try {
    for (const scenario of SCENARIOS.filter((s) => !wanted.length || wanted.includes(s.name))) {
      const fake = scenario.model ? await new FakeMessagesApi().start() : null;
      fake?.answer(...scenario.model!);
      const decider = fake ? createAnthropicDecider({ ...FAKE_MODEL, baseURL: fake.baseURL }) : null;
      const workflowId = await withWorker(env, { locks, log: silentLog, decider }, (taskQueue) =>
        scenario.run(env.client, taskQueue, locks, Date.now().toString(36)),
      ).finally(() => fake?.stop());
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
      fs.writeFileSync(path.join(outDir, `${scenario.name}.json`), json);
      console.log(`recorded ${scenario.name} (${events} events)`);
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
