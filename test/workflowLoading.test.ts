import { bundleWorkflowCode } from '@temporalio/worker';
import { quietBundlerLogger, workflowBundle } from '../devkit/temporal';
import { measureWorkflowLoading } from '../devkit/workflowLoading';

// The SDK evaluates the workflow bundle's modules for every workflow it loads (a start, a replay after
// an eviction), so what a session imports is paid by every waiter. zod, the costliest of them, stays
// with the activities: a session's request is checked by a local activity, an operator's answer and
// a status read load their schemas when they come. Timing lives in bench/workflowLoadCost.ts.

const zodModules = (modules: string[]) => modules.filter((id) => id.includes('node_modules/zod/'));

describe('loading a session into the worker', () => {
  it('evaluates no zod module when an acquireLock session is loaded', async () => {
    const { modules } = await measureWorkflowLoading(await workflowBundle(), 'acquireLock', 1);
    expect(modules.some((id) => id.includes('workflows/acquireLock'))).toBe(true);
    expect(zodModules(modules)).toEqual([]);
  });

  it('sees zod in a workflow module that builds a schema (the check can fail)', async () => {
    const bundle = await bundleWorkflowCode({
      workflowsPath: require.resolve('../bench/loadCost/zodOnly'),
      logger: quietBundlerLogger,
    });
    const { modules } = await measureWorkflowLoading(bundle, 'acquireLock', 1);
    expect(zodModules(modules).length).toBeGreaterThan(0);
  });
});
