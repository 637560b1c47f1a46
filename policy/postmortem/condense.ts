// Fitting a timeline into the briefing's word limit: routine steps give way, repeated ones are summed
// with their counts, and no grant, refusal or loss is ever left out.
import type { TimelineStep } from './timeline';

/** One line of the briefing's timeline: a step, or several alike summed, with how many it stands for. */
export interface TimelineLine {
  offsetMs: number;
  text: string;
  kind: TimelineStep['kind'];
  /** The steps this line stands for (1 for a step of its own). */
  count: number;
  /** It stands for steps that must never be left out (see isKept). */
  kept: boolean;
}

/**
 * How far a timeline is condensed: `dropped` routine steps left out (lowest rank first, latest
 * first), then `summing`: `runs` sums consecutive alike steps of a thread, `threads` all alike steps
 * of a thread, `kinds` all alike steps of every thread into one line per kind.
 */
export interface Condensation {
  dropped: number;
  summing: 'none' | 'runs' | 'threads' | 'kinds';
}

// Which steps a long timeline gives up first (lowest first); those not named are never left out.
const STEP_RANK: Partial<Record<TimelineStep['kind'], number>> = {
  requested: 0,
  ended: 1,
  'let-go': 1,
  'escalation-resolved': 2,
  'kept-alive': 2,
  denied: 3,
  'operator-answered': 4,
  escalated: 5,
};

/** Whether a step must stay in any briefing: a grant, a write, a refusal, a loss, a deadlock. */
export function isKept(step: TimelineStep): boolean {
  return step.lost === true || STEP_RANK[step.kind] === undefined;
}

/** How many routine steps a timeline could give up, at most. */
export function droppableCount(steps: readonly TimelineStep[]): number {
  return steps.filter((s) => !isKept(s)).length;
}

/** The timeline's lines under a condensation, and how many routine steps were left out. */
export function condenseSteps(
  steps: readonly TimelineStep[],
  { dropped, summing }: Condensation,
): { lines: TimelineLine[]; omitted: number } {
  const order = steps
    .map((step, index) => ({ step, index }))
    .filter(({ step }) => !isKept(step))
    .sort((a, b) => STEP_RANK[a.step.kind]! - STEP_RANK[b.step.kind]! || b.index - a.index)
    .slice(0, dropped);
  const gone = new Set(order.map((o) => o.index));
  const left = steps.filter((_, i) => !gone.has(i));
  // Alike: the same kind (a loss apart from other ends), of the same thread unless summing by kind.
  const alike = (step: TimelineStep) =>
    `${summing === 'kinds' ? '' : step.thread}|${step.kind}|${step.lost ?? ''}`;
  const lines: TimelineLine[] = [];
  const groups = new Map<string, Group>();
  let open: { key: string; group: Group } | null = null;
  for (const step of left) {
    const key = alike(step);
    const group =
      summing === 'none'
        ? undefined
        : summing === 'runs'
          ? open?.key === key
            ? open.group
            : undefined
          : groups.get(key);
    if (group) {
      group.count++;
      group.last = step;
      group.threads.add(step.thread);
      lines[group.at] = summed(group, summing === 'kinds');
    } else {
      const fresh = { first: step, last: step, count: 1, at: lines.length, threads: new Set([step.thread]) };
      lines.push(summed(fresh, false));
      groups.set(key, fresh);
      open = { key, group: fresh };
    }
  }
  return { lines, omitted: gone.size };
}

interface Group {
  first: TimelineStep;
  last: TimelineStep;
  count: number;
  /** Its line's index. */
  at: number;
  /** The threads whose steps it sums. */
  threads: Set<string>;
}

// A line for a group of alike steps. Within a thread, the first step's words and a count; across
// threads (the last resort), a short line per kind, its count and the span.
function summed({ first, last, count, threads }: Group, acrossThreads: boolean): TimelineLine {
  const line = { offsetMs: first.offsetMs, kind: first.kind, count, kept: isKept(first) };
  const lastAt = `T+${(last.offsetMs / 1000).toFixed(3)} s`;
  if (acrossThreads && count > 1)
    return {
      ...line,
      text: `${first.lost ? LOST : WHAT[first.kind]} (${[...threads].join(', ')}): ${count} times, the last at ${lastAt}`,
    };
  const tail = count === 1 ? '' : `; and ${count - 1} more like it, the last at ${lastAt}`;
  return { ...line, text: `${first.text}${tail}` };
}

// Each kind of step in a few words, for the lines that sum a kind across threads. In the words of
// taking, keeping and letting go, as the timeline's own (the draft gate admits them).
const WHAT: Record<TimelineStep['kind'], string> = {
  requested: 'a session asks for the lock',
  denied: 'a session is told to wait',
  granted: 'a session takes the lock',
  'kept-alive': 'a holder keeps its hold',
  'keep-alive-refused': 'a try to keep a hold is refused',
  'let-go': 'a holder lets go',
  'let-go-refused': 'a try to let go is refused',
  escalated: 'a session pages on-call',
  'operator-answered': 'an operator answers',
  'escalation-resolved': 'an escalation resolves itself',
  'deadlock-found': 'a session is told of a cycle of waits',
  ended: 'a session ends',
  'write-accepted': 'a write is accepted',
  'write-refused': 'a write with an older token is refused',
};
const LOST = 'a session ends having lost its hold';
