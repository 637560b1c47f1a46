// A baseline for bench/workflowLoadCost.ts: Temporal's floor, a workflow module with nothing in it.

/** A workflow that does nothing: what is measured is loading the module. */
export async function acquireLock(): Promise<void> {}
