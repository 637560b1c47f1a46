// The campaign's workload, bundled with lockwarden's workflows by its plugin: each session takes the
// key's lock through withLock, does some work, and writes one record through a fenced resource.
import { proxyActivities } from '@temporalio/workflow';
import { withLock } from '../workflows/withLock';

/**
 * What the write activity reports: accepted; refused because a newer token has written; or stopped
 * before a write because the holder could not prove its lease at the service.
 */
export type CampaignWriteResult =
  | { accepted: true; token: string }
  | { accepted: false; token: string; newestToken: string }
  | { accepted: false; token: string; unproven: string };

/** The campaign worker's own activity. */
export interface CampaignActivities {
  fencedWrite(input: {
    key: string;
    holder: string;
    token: string;
    records: number;
    workMs: number;
    /** Prove the lease at the service before each write, or trust the resource's fencing alone. */
    proves: boolean;
  }): Promise<CampaignWriteResult>;
}

const { fencedWrite } = proxyActivities<CampaignActivities>({
  // Longer than any pause the nemesis makes: a paused holder resumes and writes with its old token.
  startToCloseTimeout: '30 seconds',
  // Heartbeats carry withLock's cancellation when the lease is lost (the writer then stops).
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 3 },
});

/** One session of the campaign: lock, then work and write `records` records with the lease's token, release. */
export async function campaignWrite(input: {
  key: string;
  requester: string;
  records: number;
  ttlMs: number;
  workMs: number;
  proves: boolean;
}): Promise<CampaignWriteResult> {
  return withLock(
    {
      key: input.key,
      requester: input.requester,
      ttlMs: input.ttlMs,
      // Waits end, one way or another: a wait that outlasts this is abandoned, not left hanging.
      budget: { maxRetries: 1_000, maxTotalWaitMs: 180_000, maxBackoffMs: 2_000, baseBackoffMs: 50 },
      escalationTimeoutMs: 2_000,
    },
    (lease) =>
      fencedWrite({
        key: input.key,
        holder: input.requester,
        token: lease.token,
        records: input.records,
        workMs: input.workMs,
        proves: input.proves,
      }),
  );
}
