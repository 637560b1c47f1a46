// The workflow bundle's entry point: every workflow the worker registers.
import type { BriefingFacts } from '../policy/postmortem/briefing';
import type { BriefingPlacement, BriefingResult } from './postmortemBriefing';

export { acquireLock } from './acquireLock';
export { releaseLock } from './releaseLock';
export { lockStatus } from './lockStatus';
export { holdLockFor } from './withLock';
export { modelSwitchedOff } from './modelSwitch';

/**
 * Writes a post-mortem briefing (see ./postmortemBriefing). Its module, with the briefing validator's
 * zod schemas, is loaded when a briefing is drafted: this entry is evaluated for every workflow the
 * worker loads (bench/workflowLoadCost.ts), and sessions never need it.
 */
export async function postmortemBriefing(
  facts: BriefingFacts,
  placement?: BriefingPlacement,
): Promise<BriefingResult> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const lane = require('./postmortemBriefing') as typeof import('./postmortemBriefing');
  return lane.postmortemBriefing(facts, placement);
}
