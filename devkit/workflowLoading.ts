// Internal to the SDK (1.24): the sandbox a worker with its default `reuseV8Context` loads workflows
// in. Used here to measure what loading one workflow costs, apart from any server or history.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';

/** What loading workflows into the worker's sandbox cost, and which bundle modules the first one evaluated. */
export interface WorkflowLoadCost {
  msEach: number;
  heapKiBEach: number;
  /** The bundle's module ids the first workflow evaluated for itself (not shared by all workflows). */
  modules: string[];
}

// The SDK reads the bundle's source map to render stack traces; a bundle built in memory carries none.
const BUNDLE_FILE = 'workflow-bundle.js';
const EMPTY_SOURCE_MAP = { version: 3, file: BUNDLE_FILE, sources: [], names: [], mappings: '' };

/**
 * Loads `count` workflows of `workflowType` from `bundle` as a worker does when a workflow starts or
 * is replayed after an eviction (the SDK evaluates the bundle's workflow modules for each one), keeps
 * them alive so their memory can be read, then disposes of them. Call with `--expose-gc` for the heap.
 */
export async function measureWorkflowLoading(
  bundle: WorkflowBundleWithSourceMap,
  workflowType: string,
  count: number,
): Promise<WorkflowLoadCost> {
  const creator = await ReusableVMWorkflowCreator.create(
    { code: bundle.code, sourceMap: EMPTY_SOURCE_MAP, filename: BUNDLE_FILE },
    60_000,
    new Set<string>(),
  );
  const loaded: Awaited<ReturnType<typeof creator.createWorkflow>>[] = [];
  try {
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    for (let i = 0; i < count; i++) loaded.push(await creator.createWorkflow(loadOptions(workflowType, i)));
    const msEach = (performance.now() - started) / count;
    global.gc?.();
    const heapKiBEach = (process.memoryUsage().heapUsed - heapBefore) / count / 1024;
    const cache = (loaded[0] as unknown as { activator: { moduleCache: Map<string, unknown> } }).activator
      .moduleCache;
    return { msEach, heapKiBEach, modules: [...cache.keys()].map(String) };
  } finally {
    for (const workflow of loaded) await workflow.dispose();
    await creator.destroy();
  }
}

// The options the worker passes when it creates a workflow; only the type and ids matter here.
function loadOptions(
  workflowType: string,
  i: number,
): Parameters<ReusableVMWorkflowCreator['createWorkflow']>[0] {
  const now = new Date();
  return {
    info: {
      workflowType,
      workflowId: `load-${i}`,
      runId: `run-${i}`,
      firstExecutionRunId: `run-${i}`,
      taskQueue: 'load',
      namespace: 'default',
      attempt: 1,
      historyLength: 1,
      historySize: 0,
      continueAsNewSuggested: false,
      startTime: now,
      runStartTime: now,
      searchAttributes: {},
      typedSearchAttributes: [],
      memo: {},
      headers: {},
      unsafe: { isReplaying: false, now: Date.now },
    },
    randomnessSeed: [i, 0],
    now: now.getTime(),
    showStackTraceSources: false,
  } as unknown as Parameters<ReusableVMWorkflowCreator['createWorkflow']>[0];
}
