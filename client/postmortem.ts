// `lockctl postmortem`: its options checked, the incident read, the briefing drafted and written.
import { execFile as execFileCallback } from 'node:child_process';
import fs from 'node:fs/promises';
import { promisify } from 'node:util';
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
import { combineEvidence, type PatchEvidence, readEvidence } from '../policy/postmortem/patchEvidence';
import type { PatchDescription } from '../policy/postmortem/patchDescription';
import { type ReleaseGates, releaseGatesSchema } from '../policy/postmortem/releaseGates';
import { buildTimeline, type Timeline } from '../policy/postmortem/timeline';
import type { BriefingResult, postmortemBriefing } from '../workflows/postmortemBriefing';
import { readIncidentLog } from './incidentLog';

const execFile = promisify(execFileCallback);

const required = (what: string) =>
  z
    .string({ error: `is required (${what})` })
    .trim()
    .min(1, `is required (${what})`);

/** `lockctl postmortem`'s options, as given on the command line. */
const postmortemOptionsSchema = z.strictObject({
  since: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time' }).optional(),
  until: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time' }).optional(),
  firm: required('the advisory firm signing the briefing'),
  stakeholder: required("the client's engineering lead"),
  job: z.string().trim().min(1).optional(),
  // One report or several, each `file` or `label=file` (before=…, after=…).
  evidence: z.union([z.string().min(1), z.array(z.string().min(1))]).optional(),
  patch: z.string().min(1).optional(),
  owner: z.string().trim().min(1).optional(),
  gates: required('a YAML or JSON file of canary steps and abort thresholds'),
  format: z.enum(['text', 'md', 'eml']).default('text'),
  out: z.string().min(1).optional(),
});
export type PostmortemOptions = z.input<typeof postmortemOptionsSchema>;

/** What `writePostmortem` produced: the rendered output, the briefing and the timeline behind it. */
interface Postmortem {
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
  const evidence = await readEvidenceFiles([options.evidence ?? []].flat());
  const patch = options.patch ? await readPatch(options.patch) : null;
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
    patch,
    ...(options.owner ? { owner: options.owner } : {}),
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

async function readEvidenceFiles(specs: string[]): Promise<PatchEvidence> {
  const sources = [];
  for (const spec of specs) {
    const labelled = /^([a-z][\w-]*)=(.+)$/i.exec(spec);
    const [label, file] = labelled ? [labelled[1]!, labelled[2]!] : [null, spec];
    const text = await readOption('evidence', file);
    try {
      sources.push(readEvidence(text, label));
    } catch (error) {
      throw new InvalidLockRequestError('--evidence', [`${file}: ${(error as Error).message}`]);
    }
  }
  return combineEvidence(sources);
}

/**
 * What the patch is: a readable file (its first five non-empty lines), or else a commit range read
 * with git in the current directory (its commits' subjects, oldest first, and the diff's size).
 */
async function readPatch(spec: string): Promise<PatchDescription> {
  const file = await fs.readFile(spec, 'utf8').catch(() => null);
  if (file !== null)
    return {
      ref: spec,
      lines: file
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .slice(0, 5),
      stat: null,
    };
  // A range of refs, never an option: git reads what starts with "-" as one.
  if (!/^[\w./~^][\w./~^-]*\.\.[\w./~^][\w./~^-]*$/.test(spec))
    throw new InvalidLockRequestError('--patch', [
      `${spec} is neither a readable file nor a commit range (a1b2c3..d4e5f6)`,
    ]);
  const git = async (...args: string[]) => {
    try {
      return (await execFile('git', args, { encoding: 'utf8' })).stdout;
    } catch (error) {
      throw new InvalidLockRequestError('--patch', [
        `git ${args.join(' ')} failed: ${String((error as { stderr?: string }).stderr ?? error).trim()}`,
      ]);
    }
  };
  const subjects = (await git('log', '--no-merges', '--reverse', '--format=%s', spec))
    .split('\n')
    .filter(Boolean);
  if (!subjects.length) throw new InvalidLockRequestError('--patch', [`${spec} holds no commit`]);
  const [from, to] = spec.split('..') as [string, string];
  const short = async (ref: string) => (await git('rev-parse', '--short', ref)).trim();
  return {
    ref: `${await short(from)}..${await short(to)}`,
    lines: subjects.slice(-5),
    stat: (await git('diff', '--shortstat', spec)).trim() || null,
  };
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
