import type { Logger } from 'pino';
import type { EscalationNotice, EscalationStore } from './escalationStore';
import type { Metrics } from './metrics';

/** How on-call is reached, from reviewed configuration. */
export interface OnCallConfig {
  /** POST target for escalations; without it, escalations go to the log and the store only. */
  webhookUrl: string | null;
  /** Escalations of one key within this window that flag it for deadlock review. */
  reviewWindowMs: number;
  reviewThreshold: number;
}

/** What the on-call activity needs. */
export interface OnCallDeps {
  oncall: OnCallConfig;
  escalations: EscalationStore;
  metrics: Metrics;
  log: Logger;
}

/** On-call defaults: no webhook (log and store only); 3 escalations of a key in 10 minutes flag it. */
export const DEFAULT_ONCALL: OnCallConfig = {
  webhookUrl: null,
  reviewWindowMs: 10 * 60 * 1000,
  reviewThreshold: 3,
};

/**
 * The webhook's JSON body (documented in the README). `resolve` says how an operator answers: the
 * `resolveEscalation` update to `workflowId` (`lockctl resolve`, which is told when an answer is refused),
 * or the signal of the same name from the Temporal UI's Send Signal.
 */
export interface EscalationWebhookPayload extends EscalationNotice {
  type: 'lockwarden.escalation';
  at: string;
  flaggedForReview: boolean;
  resolve: { update: 'resolveEscalation'; signal: 'resolveEscalation'; workflowId: string; example: string };
}

/** The on-call activity: records the escalation, tells a human, and runs the starvation monitor. */
export function createOnCallActivities({ oncall, escalations, metrics, log }: OnCallDeps) {
  return {
    async notifyOnCall(
      notice: EscalationNotice,
    ): Promise<{ via: 'webhook' | 'log'; flaggedForReview: boolean; recentForKey: number }> {
      const at = new Date();
      const recentForKey =
        (await escalations.recentForKey(notice.key, new Date(at.getTime() - oncall.reviewWindowMs))) + 1;
      const flaggedForReview = recentForKey >= oncall.reviewThreshold;
      if (flaggedForReview) {
        metrics.keysFlaggedForReview.inc({ key: notice.key });
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
          update: 'resolveEscalation',
          signal: 'resolveEscalation',
          workflowId: notice.workflowId,
          example: `lockctl resolve '${notice.workflowId}' --action retry --operator <you> --reason <why>`,
        },
      };
      log.warn({ event: 'lock.escalated', ...payload }, 'escalated to on-call');
      if (oncall.webhookUrl) {
        const response = await fetch(oncall.webhookUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(payload),
          signal: AbortSignal.timeout(10_000),
        });
        // Thrown before anything is recorded: Temporal retries the delivery (at least once, never lost).
        if (!response.ok) throw new Error(`on-call webhook answered HTTP ${response.status}`);
      }
      await escalations.record({ ...notice, at: payload.at });
      metrics.escalations.inc({ key: notice.key, deadlock: String(notice.deadlock) });
      return { via: oncall.webhookUrl ? 'webhook' : 'log', flaggedForReview, recentForKey };
    },
  };
}
