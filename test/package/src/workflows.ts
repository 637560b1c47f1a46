import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import { withLock } from 'lockwarden/workflow';
import type * as activities from './activities';

const { exportBatch } = proxyActivities<typeof activities>({ startToCloseTimeout: '10 seconds' });

/** A user's job that takes a lock from inside a workflow. */
export async function nightlyExport(key: string): Promise<{ token: string; receipt: string }> {
  return withLock({ key, requester: workflowInfo().workflowId }, async (lease) => ({
    token: lease.token,
    receipt: await exportBatch({ key, token: lease.token }),
  }));
}
