// What one call into a vm context costs with and without an execution timeout. The Temporal SDK
// enters a workflow's context several times an activation, always with its isolate execution
// timeout, and Node starts a watchdog thread for every call that has one (nodejs/node#47739).
//   npx tsx bench/vmTimeoutCost.ts
import vm from 'node:vm';

const CALLS = 20_000;
const context = vm.createContext({ counter: 0 });
const script = new vm.Script('counter++');

function microsecondsPerCall(options: vm.RunningScriptOptions): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) script.runInContext(context, options);
  return Number(process.hrtime.bigint() - started) / CALLS / 1_000;
}

microsecondsPerCall({}); // warm up
const plain = microsecondsPerCall({});
const timed = microsecondsPerCall({ timeout: 60_000 });
console.log(
  `runInContext, ${CALLS} calls: ${plain.toFixed(2)} µs without a timeout, ${timed.toFixed(2)} µs with one (${(timed / plain).toFixed(0)}×)`,
);
