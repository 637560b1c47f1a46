// What one session costs the worker to load: the SDK evaluates the workflow bundle's modules for
// every workflow it starts or replays after an eviction, so this is paid by every waiter that starts,
// and by every parked waiter woken after it left the workflow cache. Against, in the same run, a
// module with nothing in it (the floor) and one that builds the request's zod schemas (what every
// session loaded while the workflow checked its own request).
//   node --expose-gc -r tsx/cjs bench/workflowLoadCost.ts [--count 300]
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Command } from 'commander';
import { quietBundlerLogger } from '../devkit/temporal';
import { measureWorkflowLoading } from '../devkit/workflowLoading';
import { WORKFLOWS_PATH } from '../worker/createWorker';
import { wholeNumber } from './cliArgs';

const { count } = new Command('workflowLoadCost')
  .option('--count <n>', 'workflows loaded per bundle', wholeNumber(10), 300)
  .parse()
  .opts<{ count: number }>();

const SUBJECTS = [
  { name: "lockwarden's workflows (acquireLock)", workflowsPath: WORKFLOWS_PATH },
  { name: 'floor: an empty workflow module', workflowsPath: require.resolve('./loadCost/noop') },
  { name: "zod: the request's schemas", workflowsPath: require.resolve('./loadCost/zodOnly') },
];

async function main(): Promise<void> {
  if (!global.gc) throw new Error('run with node --expose-gc, so the heap can be read after a collection');
  const rows: string[] = [];
  for (const subject of SUBJECTS) {
    const bundle = await bundleWorkflowCode({
      workflowsPath: subject.workflowsPath,
      logger: quietBundlerLogger,
    });
    const cost = await measureWorkflowLoading(bundle, 'acquireLock', count);
    const zodModules = cost.modules.filter((id) => id.includes('node_modules/zod/')).length;
    rows.push(
      `| ${subject.name} | ${cost.msEach.toFixed(2)} | ${cost.heapKiBEach.toFixed(0)} | ${cost.modules.length} (${zodModules} of zod) |`,
    );
    console.log(rows.at(-1));
  }
  const table = [
    `workflow load cost, ${count} workflows a bundle, ${new Date().toISOString()}`,
    '',
    '| bundle | ms a workflow | heap KiB a workflow | modules evaluated per workflow |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
  const out = path.join(__dirname, 'results', 'workflow-load-cost.md');
  fs.writeFileSync(out, table);
  console.log(`written to ${path.relative(process.cwd(), out)}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exit(1);
});
