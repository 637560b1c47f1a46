// A baseline for bench/workflowLoadCost.ts: a workflow module that evaluates zod and builds the
// session request's schemas, as lockwarden's workflow modules did before they left zod to activities.
export { acquireRequestSchema } from '../../policy/decisions/acquireRequest';
export { operatorDecisionSchema } from '../../policy/decisions/operatorAnswer';

/** A workflow that does nothing: what is measured is loading the module. */
export async function acquireLock(): Promise<void> {}
