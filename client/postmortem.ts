import fs from 'node:fs/promises';
import type { Client } from '@temporalio/client';
import YAML from 'yaml';
import { z } from 'zod';
import type { EscalationStore } from '../activities/escalationStore';
import type { FencedWriteAttempt } from '../locks/fencedResource';
import { DEFAULT_TASK_QUEUE } from '../policy/constants';
import { describeIssues, InvalidLockRequestError } from '../policy/errors';
import {
  type Briefing,
  briefingEmail,
  briefingMarkdown,
  briefingText,
  briefingWords,
} from '../policy/postmortem/briefing';
import { NO_EVIDENCE, type PatchEvidence, summariseEvidence } from '../policy/postmortem/patchEvidence';
import { type ReleaseGates, releaseGatesSchema } from '../policy/postmortem/releaseGates';
import { buildTimeline, type Timeline } from '../policy/postmortem/timeline';
import type { BriefingResult, postmortemBriefing } from '../workflows/postmortemBriefing';
import { readIncidentLog } from './incidentLog';

const required = (what: string) =>
  z
    .string({ error: `is required (${what})` })
    .trim()
    .min(1, `is required (${what})`);

/** `lockctl postmortem`'s options, as given on the command line. */
export const postmortemOptionsSchema = z.strictObject({
  since: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time' }).optional(),
  until: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time' }).optional(),
  firm: required('the advisory firm signing the briefing'),
  stakeholder: required("the client's engineering lead"),
  job: z.string().trim().min(1).optional(),
  evidence: z.string().min(1).optional(),
  gates: required('a YAML or JSON file of canary steps and abort thresholds'),
  format: z.enum(['text', 'md', 'eml']).default('text'),
  out: z.string().min(1).optional(),
});
export type PostmortemOptions = z.input<typeof postmortemOptionsSchema>;

/** What `writePostmortem` produced: the rendered output, the briefing and the timeline behind it. */
export interface Postmortem {
  output: string;
  result: BriefingResult;
  timeline: Timeline;
  words: number;
}

/**
 * Reads the key's incident log from Temporal, builds the timeline, and has the `postmortemBriefing`
 * workflow write the briefing (on the worker's task queue: the model lane runs there). Bad options,
 * gates or evidence throw an InvalidLockRequest naming the option.
 */
export async function writePostmortem(
  client: Client,
  key: string,
  input: PostmortemOptions,
  extra: {
    taskQueue?: string;
    /** The model worker's task queue, where the draft is made (lockctl: LOCKWARDEN_MODEL_TASK_QUEUE). */
    modelTaskQueue?: string;
    escalations?: EscalationStore;
    writes?: FencedWriteAttempt[];
  } = {},
): Promise<Postmortem> {
  const parsed = postmortemOptionsSchema.safeParse(input);
  if (!parsed.success) throw new InvalidLockRequestError('postmortem options', optionProblems(parsed.error));
  const options = parsed.data;
  const gates = await readGates(options.gates);
  const evidence = options.evidence ? await readEvidence(options.evidence) : NO_EVIDENCE;
  const events = await readIncidentLog({
    client,
    key,
    since: options.since ? new Date(options.since) : undefined,
    until: options.until ? new Date(options.until) : undefined,
    escalations: extra.escalations,
    writes: extra.writes,
  });
  const timeline = buildTimeline(key, events);
  const facts = {
    firm: options.firm,
    stakeholder: options.stakeholder,
    job: options.job ?? key,
    timeline,
    evidence,
    gates,
  };
  const result = await client.workflow.execute<typeof postmortemBriefing>('postmortemBriefing', {
    taskQueue: extra.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId: `postmortem/${key}/${Date.now()}`,
    args: [facts, extra.modelTaskQueue ? { modelTaskQueue: extra.modelTaskQueue } : {}],
    workflowExecutionTimeout: '5 minutes',
    staticSummary: `post-mortem briefing for ${key}`,
  });
  const output = render(result.briefing, options.format, facts);
  if (options.out) await fs.writeFile(options.out, output);
  return { output, result, timeline, words: briefingWords(result.briefing) };
}

function render(
  briefing: Briefing,
  format: 'text' | 'md' | 'eml',
  facts: { firm: string; stakeholder: string; timeline: Timeline },
) {
  if (format === 'md') return briefingMarkdown(briefing);
  if (format === 'text') return briefingText(briefing);
  const last = facts.timeline.steps.at(-1)?.at ?? facts.timeline.startedAt ?? 0;
  return briefingEmail(briefing, { from: facts.firm, to: facts.stakeholder, date: new Date(last) });
}

async function readGates(file: string): Promise<ReleaseGates> {
  const text = await readOption('gates', file);
  let data: unknown;
  try {
    data = YAML.parse(text);
  } catch (error) {
    throw new InvalidLockRequestError('--gates', [
      `${file} is neither YAML nor JSON: ${(error as Error).message.split('\n')[0]}`,
    ]);
  }
  const gates = releaseGatesSchema.safeParse(data);
  if (!gates.success) throw new InvalidLockRequestError('--gates', describeIssues(gates.error));
  return gates.data;
}

async function readEvidence(file: string): Promise<PatchEvidence> {
  const text = await readOption('evidence', file);
  try {
    return summariseEvidence(text);
  } catch (error) {
    throw new InvalidLockRequestError('--evidence', [`${file}: ${(error as Error).message}`]);
  }
}

async function readOption(option: string, file: string): Promise<string> {
  return fs.readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new InvalidLockRequestError(`--${option}`, [
      `cannot read ${file} (${error.code ?? error.message})`,
    ]);
  });
}

// Problems named by option, as the command line spells them.
function optionProblems(error: z.ZodError): string[] {
  return describeIssues(error).map((line) => `--${line}`);
}
