// Bundles the user's workflows as a worker would and reports which packages ended up in the bundle:
// bundleWorkflowCode itself refuses Node built-ins; a driver or a Node-only library must not be there.
import { bundleWorkflowCode } from '@temporalio/worker';

const NODE_ONLY = [
  'better-sqlite3',
  'pg',
  'redis',
  'etcd3',
  '@anthropic-ai/sdk',
  'pino',
  'prom-client',
  'commander',
];

async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflows'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error },
  });
  const found = NODE_ONLY.filter((name) => code.includes(`node_modules/${name}/`));
  const lockwardenModules = [...new Set(code.match(/node_modules\/lockwarden\/dist\/[\w/.-]+/g) ?? [])];
  console.log(JSON.stringify({ bytes: code.length, nodeOnly: found, lockwardenModules }));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
