// Runs each scenario against the dev server and writes the histories it names to
// test/histories/<name>.json, which the replay suite replays on every run. See
// test/histories/README.md for when to re-record and when to keep the old files. A committed history
// is the record of a released worker's run: it is never overwritten unless --overwrite says so.
//   npx tsx scripts/recordHistories.ts [--overwrite] [scenario-name ...]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileEscalationStore } from '../activities/escalationStore';
import { runScenario } from '../test/support/runScenario';
import { SCENARIOS } from '../test/support/scenarios';
import {
  connectTestEnv,
  freshSqliteLockService,
  silentLog,
  TEMPORAL_ADDRESS,
} from '../test/support/temporalFixture';

async function main(): Promise<void> {
  const overwrite = process.argv.includes('--overwrite');
  const wanted = process.argv.slice(2).filter((arg) => arg !== '--overwrite');
  const unknown = wanted.filter((name) => !SCENARIOS.some((s) => s.name === name));
  if (unknown.length) throw new Error(`no such scenario: ${unknown.join(', ')}`);
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
      const { histories } = await runScenario(env, scenario, { locks, log: silentLog, escalations });
      for (const [name, workflowId] of Object.entries(histories)) {
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
        const file = path.join(outDir, `${name}.json`);
        if (fs.existsSync(file) && !overwrite) {
          console.log(`kept ${name}: already committed (--overwrite replaces it)`);
          continue;
        }
        fs.writeFileSync(file, json);
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
