// Summarizes a V8 CPU profile (`node --cpu-prof`): self time by function, and where one function is
// called from. Record the scale bench's worker with
//   SCALE_WORKER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npx tsx bench/scale.ts --rows 1000:1000
// (one file per thread: the worker's main thread and its workflow thread), then
//   npx tsx bench/cpuProfileSummary.ts /tmp/prof/CPU.*.cpuprofile [--callers runInContext]
import fs from 'node:fs';
import { Command } from 'commander';
import { wholeNumber } from './cliArgs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const options = new Command('cpu-profile-summary')
  .argument('<files...>', '.cpuprofile files')
  .option('--top <n>', 'functions listed', wholeNumber(1), 12)
  .option('--callers <function>', 'also list the call paths into this function')
  .parse();
const { top, callers } = options.opts<{ top: number; callers?: string }>();

const frameName = (n: ProfileNode) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;

for (const file of options.args) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  // Microseconds of self time per profile node.
  const selfTime = new Map<number, number>();
  profile.samples.forEach((id, i) =>
    selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)),
  );
  const total = [...selfTime.values()].reduce((a, b) => a + b, 0);
  const byFrame = new Map<string, number>();
  for (const [id, us] of selfTime) {
    const name = frameName(byId.get(id)!);
    byFrame.set(name, (byFrame.get(name) ?? 0) + us);
  }
  console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
  for (const [name, us] of [...byFrame].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${((100 * us) / total).toFixed(1).padStart(5)} %  ${name}`);
  if (!callers) continue;
  const paths = new Map<string, number>();
  for (const [id, us] of selfTime) {
    if (byId.get(id)!.callFrame.functionName !== callers) continue;
    const chain: string[] = [];
    for (let at = parentOf.get(id); at !== undefined && chain.length < 4; at = parentOf.get(at))
      chain.push(frameName(byId.get(at)!));
    const key = chain.join(' < ');
    paths.set(key, (paths.get(key) ?? 0) + us);
  }
  console.log(`  called into ${callers} (self time) from:`);
  for (const [chain, us] of [...paths].sort((a, b) => b[1] - a[1]).slice(0, 5))
    console.log(`  ${(us / 1e6).toFixed(1).padStart(6)} s  < ${chain}`);
}
