// The post-mortem briefing's activities: the drafting lane, and the facts it is drafted from.
import { ApplicationFailure } from '@temporalio/activity';
import type { Logger } from 'pino';
import { MODEL_ALWAYS_ON, type ModelSwitchReader } from './modelSwitch';
import { admitDraft } from '../policy/textSafety/denyGate';
import type { BriefingDraft, DraftRequest } from '../policy/postmortem/modelDraft';

/** What the drafting lane answered: a draft to validate, or why there is none (the template answers). */
export type DraftAnswer =
  | { kind: 'draft'; draft: BriefingDraft; model: string }
  | {
      kind: 'none';
      cause:
        | 'no-model-configured'
        | 'gate-refused'
        | 'invalid-draft'
        | 'model-request-rejected'
        | 'model-switched-off';
      detail: string;
    };

/** Drafts a briefing with a model; see createAnthropicDrafter. Absent when no model is configured. */
export type Drafter = (request: DraftRequest) => Promise<DraftAnswer>;

/**
 * The drafting activity of the post-mortem briefing. The facts pass the deny gate as a
 * `draft_briefing` before any model sees them; a model's retryable failures are Temporal's to retry.
 */
export function createBriefingActivities({
  drafter,
  log,
  modelSwitch = MODEL_ALWAYS_ON,
}: {
  drafter: Drafter | null;
  log: Logger;
  /** The operators' kill switch (lockctl model off): while off, the template writes. */
  modelSwitch?: ModelSwitchReader;
}) {
  return {
    async draftBriefing(request: DraftRequest): Promise<DraftAnswer> {
      if (!drafter) return { kind: 'none', cause: 'no-model-configured', detail: 'no model configured' };
      const model = await modelSwitch.read();
      if (model.model === 'off')
        return { kind: 'none', cause: 'model-switched-off', detail: `the model is off: ${model.reason}` };
      const verdict = admitDraft({ task: 'draft_briefing', text: request.facts });
      if (!verdict.admitted) {
        log.warn(
          { event: 'briefing.draft-refused', reason: verdict.reason },
          'draft request refused by the deny gate',
        );
        return { kind: 'none', cause: 'gate-refused', detail: verdict.reason };
      }
      try {
        const answer = await drafter(request);
        log.info(
          {
            event: 'briefing.drafted',
            outcome: answer.kind,
            cause: answer.kind === 'none' ? answer.cause : null,
          },
          'briefing draft',
        );
        return answer;
      } catch (error) {
        const type =
          error instanceof ApplicationFailure ? error.type : error instanceof Error ? error.name : 'unknown';
        log.warn(
          { event: 'briefing.drafted', outcome: 'thrown', errorType: type },
          'briefing draft failed, to be retried',
        );
        throw error;
      }
    },
  };
}
