import type { Logger } from 'pino';
import type { EscalationStore } from './escalationStore';
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

/** An escalation as a session reports it. */
export interface EscalationNotice {
  key: string;
  requester: string;
  workflowId: string;
  reason: string;
  deadlock: boolean;
  attempts: number;
  waitedMs: number;
}

/**
 * The webhook's JSON body (documented in the README). `resolve` says how an operator answers: the
 * `resolveEscalation` signal to `workflowId`, from the Temporal UI or `lockctl resolve`.
 */
export interface EscalationWebhookPayload extends EscalationNotice {
  type: 'lockwarden.escalation';
  at: string;
  flaggedForReview: boolean;
  resolve: { signal: 'resolveEscalation'; workflowId: string; example: string };
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
      await escalations.record({
        at: payload.at,
        key: notice.key,
        requester: notice.requester,
        workflowId: notice.workflowId,
        reason: notice.reason,
        deadlock: notice.deadlock,
        attempts: notice.attempts,
      });
      metrics.escalations.inc({ key: notice.key, deadlock: String(notice.deadlock) });
      return { via: oncall.webhookUrl ? 'webhook' : 'log', flaggedForReview, recentForKey };
    },
  };
}
