// The postmortemBriefing workflow: drafts a briefing by the model, validated, or by the template.
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import { FAILURE_TYPES } from '../policy/errors';
import type { Activities } from '../activities';
import { onModelWorker } from './modelWorkerCalls';
import { type Briefing, type BriefingFacts, renderBriefing } from '../policy/postmortem/briefing';
import { draftRequest, draftToBriefing } from '../policy/postmortem/modelDraft';
import { validateBriefing } from '../policy/postmortem/validateBriefing';

// The model's drafting is retried by Temporal like the retry decision: rate limits, overload and
// server errors a bounded number of times; after that the template answers.
const DRAFT_OPTIONS = {
  startToCloseTimeout: '2 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 4,
  },
} as const;
const { draftBriefing } = proxyActivities<Activities>(DRAFT_OPTIONS);

/** Where the briefing is drafted: the model worker's task queue, or (absent) this worker. */
export interface BriefingPlacement {
  modelTaskQueue?: string;
}

/** The briefing, which lane wrote it, and why the template answered when a model was asked. */
export interface BriefingResult {
  briefing: Briefing;
  lane: 'template' | 'model';
  fallbackCause: string | null;
  fallbackDetail: string | null;
}

/**
 * Writes a post-mortem briefing from a key's timeline: a model's draft when one is configured and
 * its draft passes the validator, else the deterministic template (validated the same way).
 */
export async function postmortemBriefing(
  facts: BriefingFacts,
  placement?: BriefingPlacement,
): Promise<BriefingResult> {
  const template = typedOnBadFacts(() => renderBriefing(facts));
  // Either lane's briefing is checked before it is written: the template's too (seed 004's limits
  // hold for every briefing, not only a model's). One it cannot pass fails the run, typed and named.
  const templateProblems = validateBriefing(template, facts.timeline, {
    modelDrafted: false,
    evidence: facts.evidence,
  });
  if (templateProblems.length)
    throw ApplicationFailure.nonRetryable(
      `the template's briefing fails its checks: ${templateProblems.map((p) => `${p.rule}: ${p.problem}`).join('; ')}`,
      FAILURE_TYPES.invalidBriefing,
    );
  const fallback = (cause: string, detail: string): BriefingResult => ({
    briefing: template,
    lane: 'template',
    fallbackCause: cause,
    fallbackDetail: detail,
  });
  let answer;
  try {
    // On the model worker's queue when there is one: with none taking it in time, the template answers.
    const drafting = placement?.modelTaskQueue
      ? onModelWorker(placement.modelTaskQueue, DRAFT_OPTIONS).draftBriefing
      : draftBriefing;
    answer = await drafting.executeWithOptions({ summary: 'draft the briefing' }, [draftRequest(facts)]);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return fallback('model-unavailable', error.cause?.message ?? error.message);
  }
  if (answer.kind === 'none') {
    return answer.cause === 'no-model-configured'
      ? { briefing: template, lane: 'template', fallbackCause: null, fallbackDetail: null }
      : fallback(answer.cause, answer.detail);
  }
  const drafted = draftToBriefing(answer.draft);
  const problems = validateBriefing(drafted, facts.timeline, {
    modelDrafted: true,
    evidence: facts.evidence,
  });
  if (problems.length) return fallback(problems[0]!.rule, problems.map((p) => p.problem).join('; '));
  return { briefing: drafted, lane: 'model', fallbackCause: null, fallbackDetail: null };
}

// Facts that are not a timeline and its evidence (any client may start this workflow with anything)
// fail the workflow with a typed failure instead of failing its task again and again.
function typedOnBadFacts<T>(render: () => T): T {
  try {
    return render();
  } catch (error) {
    if (!(error instanceof TypeError || error instanceof RangeError)) throw error;
    throw ApplicationFailure.nonRetryable(
      `invalid briefing facts: ${error.message}`,
      FAILURE_TYPES.invalidLockRequest,
    );
  }
}
