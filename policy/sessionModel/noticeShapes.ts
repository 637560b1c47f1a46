// Shape checks of the notices sessions send each other, run in signal handlers without zod.

/** The longest text a notice may carry in one field: a cycle of 100 edges, described. */
const MAX_TEXT = 20_000;
/** The most edges a deadlock notice may list. */
const MAX_EDGES = 100;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function shortText(value: unknown, max: number): boolean {
  return typeof value === 'string' && value.length > 0 && value.length <= max;
}

/**
 * Why `input` is not a deadlock notice of the documented shape ({ cycle, escalator, edges? }, each
 * edge { waiter, key, holder }), or null. A signal handler refuses such a notice instead of failing
 * its workflow task (which would retry forever and wedge the session).
 */
export function deadlockNoticeProblem(input: unknown): string | null {
  if (!isRecord(input)) return '(input): must be an object { cycle, escalator, edges }';
  if (!shortText(input.cycle, MAX_TEXT)) return `cycle: must be a string of 1 to ${MAX_TEXT} characters`;
  if (!shortText(input.escalator, 200)) return 'escalator: must be a string of 1 to 200 characters';
  if (input.edges === undefined) return null;
  if (!Array.isArray(input.edges) || input.edges.length > MAX_EDGES)
    return `edges: must be a list of at most ${MAX_EDGES} edges`;
  const bad = input.edges.findIndex(
    (e) => !isRecord(e) || !['waiter', 'key', 'holder'].every((f) => shortText(e[f], 256)),
  );
  return bad < 0
    ? null
    : `edges.${bad}: must be { waiter, key, holder }, each a string of 1 to 256 characters`;
}

/**
 * Why `input` is not an overtaking notice about this waiter ({ key, waiter, waiterSince, overtakenBy,
 * overtakerSince } with the later arrival queued after the waiter), or null.
 */
export function overtakingProblem(input: unknown, key: string, waiter: string): string | null {
  if (!isRecord(input))
    return '(input): must be an object { key, waiter, waiterSince, overtakenBy, overtakerSince }';
  if (input.key !== key || input.waiter !== waiter) return 'key, waiter: must name this session';
  if (!shortText(input.overtakenBy, 256)) return 'overtakenBy: must be a string of 1 to 256 characters';
  const times = [input.waiterSince, input.overtakerSince];
  if (!times.every((t) => typeof t === 'number' && Number.isSafeInteger(t) && t >= 0))
    return 'waiterSince, overtakerSince: must be times in ms since the epoch';
  if ((input.overtakerSince as number) <= (input.waiterSince as number))
    return 'overtakerSince: must be later than waiterSince (else nobody was overtaken)';
  return null;
}
