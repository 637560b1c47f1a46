// Paging on-call: the escalation webhook and its record in the escalation store.
import type { Logger } from 'pino';
import { resolveEscalation, resolveEscalationSignal } from '../temporal/messages';
import type { EscalationNotice, EscalationResolution, EscalationStore } from './escalationStore';
import type { Metrics } from './metrics';
import type { SessionWaker } from './sessionSignals';

/** How on-call is reached, from reviewed configuration. */
export interface OnCallConfig {
  /** POST target for escalations; without it, escalations go to the log and the store only. */
  webhookUrl: string | null;
  /** Escalations of one key within this window that flag it for deadlock review. */
  reviewWindowMs: number;
  reviewThreshold: number;
}

/** What the on-call activity needs. */
interface OnCallDeps {
  oncall: OnCallConfig;
  escalations: EscalationStore;
  metrics: Metrics;
  log: Logger;
  /** Counts a key's escalations across every worker; without it, this worker's store alone counts. */
  sessions?: Pick<SessionWaker, 'escalationsOf'>;
}

/** On-call defaults: no webhook (log and store only); 3 escalations of a key in 10 minutes flag it. */
export const DEFAULT_ONCALL: OnCallConfig = {
  webhookUrl: null,
  reviewWindowMs: 10 * 60 * 1000,
  reviewThreshold: 3,
};

/**
 * The webhook's JSON body (documented in docs/sessions.md, Escalation). `resolve` says how an operator answers: the
 * `resolveEscalation` update to `workflowId` (`lockctl resolve`, which is told when an answer is refused),
 * or the signal of the same name from the Temporal UI's Send Signal.
 */
interface EscalationWebhookPayload extends EscalationNotice {
  type: 'lockwarden.escalation';
  at: string;
  flaggedForReview: boolean;
  resolve: { update: string; signal: string; workflowId: string; example: string };
}

/** The webhook's JSON body when an escalation resolved itself: nothing is left for on-call to do. */
interface ResolutionWebhookPayload extends EscalationResolution {
  type: 'lockwarden.escalation-resolved';
  at: string;
}

/** The on-call activities: record an escalation or its resolution, tell a human, run the starvation monitor. */
export function createOnCallActivities({ oncall, escalations, metrics, log, sessions }: OnCallDeps) {
  // The store failed: logged (its error's message, which names the file) and counted; `fallback` is answered.
  function storeFailed<T>(problem: 'unreadable' | 'unwritable', error: unknown, fallback: T): T {
    metrics.escalationStoreProblems.inc({ problem });
    log.error(
      {
        event: 'escalation-store.failed',
        problem,
        error: error instanceof Error ? error.message : String(error),
      },
      `the escalation store is ${problem}; the page is sent all the same`,
    );
    return fallback;
  }
  return {
    async notifyOnCall(
      notice: EscalationNotice,
    ): Promise<{ via: 'webhook' | 'log'; flaggedForReview: boolean; recentForKey: number }> {
      const at = new Date();
      const since = new Date(at.getTime() - oncall.reviewWindowMs);
      // The key's escalations on every worker (visibility) or, where it cannot say, on this one. A
      // store that cannot be read counts none: the page goes out all the same.
      const [here, everywhere] = await Promise.all([
        escalations
          .recentForKey(notice.key, since)
          .catch((error: unknown) => storeFailed('unreadable', error, 0)),
        sessions?.escalationsOf(notice.key, since, notice.workflowId) ?? null,
      ]);
      const recentForKey = Math.max(here, everywhere ?? 0) + 1;
      const flaggedForReview = recentForKey >= oncall.reviewThreshold;
      if (flaggedForReview) {
        metrics.keysFlaggedForReview.inc(metrics.keyLabel(notice.key));
        log.warn(
          {
            event: 'lock.flagged-for-review',
            key: notice.key,
            recentEscalations: recentForKey,
            windowMs: oncall.reviewWindowMs,
          },
          'key flagged for deadlock review',
        );
      }
      const payload: EscalationWebhookPayload = {
        type: 'lockwarden.escalation',
        at: at.toISOString(),
        ...notice,
        flaggedForReview,
        resolve: {
          update: resolveEscalation.name,
          signal: resolveEscalationSignal.name,
          workflowId: notice.workflowId,
          example: `lockctl resolve '${notice.workflowId}' --action retry --operator <you> --reason <why>`,
        },
      };
      log.warn({ event: 'lock.escalated', ...payload }, 'escalated to on-call');
      if (oncall.webhookUrl) await postWebhook(oncall.webhookUrl, payload);
      // Paged: a store that cannot be written now is said and counted, not a retry that pages again.
      await escalations
        .record({ ...notice, at: payload.at })
        .catch((error: unknown) => storeFailed('unwritable', error, undefined));
      metrics.escalations.inc({ ...metrics.keyLabel(notice.key), deadlock: String(notice.deadlock) });
      return { via: oncall.webhookUrl ? 'webhook' : 'log', flaggedForReview, recentForKey };
    },

    /** Tells on-call that an escalation resolved itself (the waiter acquired the lock), and records it. */
    async notifyEscalationResolved(resolution: EscalationResolution): Promise<{ via: 'webhook' | 'log' }> {
      const payload: ResolutionWebhookPayload = {
        type: 'lockwarden.escalation-resolved',
        at: new Date().toISOString(),
        ...resolution,
      };
      log.info(
        { event: 'lock.escalation-resolved', ...payload },
        'escalation resolved: the lock was acquired',
      );
      if (oncall.webhookUrl) await postWebhook(oncall.webhookUrl, payload);
      await escalations
        .recordResolution(payload)
        .catch((error: unknown) => storeFailed('unwritable', error, undefined));
      return { via: oncall.webhookUrl ? 'webhook' : 'log' };
    },
  };
}

// Throws before anything is recorded on a refused delivery: Temporal retries it (at least once, never lost).
async function postWebhook(url: string, payload: object): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw new Error(`on-call webhook answered HTTP ${response.status}`);
}
