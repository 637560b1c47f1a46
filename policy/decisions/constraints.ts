/**
 * The operator constraints a request may carry, in the forms people write them (the retry prompt's
 * `[CONSTRAINTS]`). Each is parsed when the request is checked and enforced by the guardrails as a
 * hard limit; the model still reads them as text. Case is ignored, a leading "must"/"should" and a
 * trailing full stop are allowed:
 *
 *   at most N retries          (also: "not exceed N retries", "no more than N retries", "max N retries")
 *   escalate after D           (also: "escalate to on-call after D", "escalate to #team after D of waiting";
 *                               whom to page is the worker's on-call configuration, not the constraint's)
 *   do not escalate before D   (also: "not escalate before D", "never escalate before D")
 *   preserve FIFO ordering     (also: "preserve FIFO", "preserve FIFO order")
 *
 * D is a number and a unit: ms, s, sec(s), second(s), m, min(s), minute(s), h, hour(s); "30s" or
 * "30 s". Pure and free of zod: the workflow applies the parsed rules.
 */

/** What a request's constraints add up to: the tightest of each kind. */
export interface ConstraintRules {
  /** At most this many retries (the budget's maxRetries, if smaller, still wins). */
  maxRetries: number | null;
  /** Escalate once the session has waited this long: its wait budget ends here. */
  escalateAfterMs: number | null;
  /** No escalation a decision asks for before the session has waited this long (a spent budget still escalates). */
  noEscalationBeforeMs: number | null;
  /** The key's queue must be first come, first served. */
  fifo: boolean;
}

export const NO_CONSTRAINTS: ConstraintRules = {
  maxRetries: null,
  escalateAfterMs: null,
  noEscalationBeforeMs: null,
  fifo: false,
};

type Parsed =
  | { kind: 'max-retries'; n: number }
  | { kind: 'escalate-after'; ms: number }
  | { kind: 'no-escalation-before'; ms: number }
  | { kind: 'fifo' };

const DURATION = String.raw`(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)`;
const FORMS: { pattern: RegExp; read: (m: RegExpExecArray) => Parsed }[] = [
  {
    pattern: /^(?:not exceed|at most|no more than|max(?:imum(?: of)?)?)\s+(\d+)\s+retr(?:y|ies)$/,
    read: (m) => ({ kind: 'max-retries', n: Number(m[1]) }),
  },
  {
    pattern: new RegExp(String.raw`^escalate(?: to .+?)? after ${DURATION}(?: of waiting)?$`),
    read: (m) => ({ kind: 'escalate-after', ms: toMs(m[1]!, m[2]!) }),
  },
  {
    pattern: new RegExp(String.raw`^(?:do not|not|never) escalate before ${DURATION}(?: of waiting)?$`),
    read: (m) => ({ kind: 'no-escalation-before', ms: toMs(m[1]!, m[2]!) }),
  },
  { pattern: /^preserve fifo(?: ordering| order)?$/, read: () => ({ kind: 'fifo' }) },
];

/** The forms accepted, for error messages and docs/operations.md. */
const CONSTRAINT_FORMS = [
  'at most N retries',
  'escalate after D',
  'do not escalate before D',
  'preserve FIFO ordering',
] as const;

/** Reads one constraint, or returns null when it is none of the accepted forms. */
export function parseConstraint(text: string): Parsed | null {
  const plain = text
    .trim()
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/^(?:must|should) /, '')
    .replace(/\.$/, '');
  for (const { pattern, read } of FORMS) {
    const match = pattern.exec(plain);
    if (match) return read(match);
  }
  return null;
}

/** Why a request's constraints are refused: the one at `index` (null: how two combine). */
interface ConstraintProblem {
  index: number | null;
  message: string;
}

/**
 * Adds up a request's constraints, the tightest of each kind winning. Returns the problems instead
 * when one is not understood or two contradict each other.
 */
export function readConstraints(
  texts: readonly string[],
): { ok: true; rules: ConstraintRules } | { ok: false; problems: ConstraintProblem[] } {
  const rules = { ...NO_CONSTRAINTS };
  const problems: ConstraintProblem[] = [];
  texts.forEach((text, i) => {
    const parsed = parseConstraint(text);
    if (!parsed) {
      problems.push({
        index: i,
        message: `${JSON.stringify(text)} is not understood; write one of: ${CONSTRAINT_FORMS.join('; ')}`,
      });
      return;
    }
    if (parsed.kind === 'max-retries') rules.maxRetries = Math.min(rules.maxRetries ?? Infinity, parsed.n);
    if (parsed.kind === 'escalate-after')
      rules.escalateAfterMs = Math.min(rules.escalateAfterMs ?? Infinity, parsed.ms);
    if (parsed.kind === 'no-escalation-before')
      rules.noEscalationBeforeMs = Math.max(rules.noEscalationBeforeMs ?? 0, parsed.ms);
    if (parsed.kind === 'fifo') rules.fifo = true;
  });
  if (
    rules.escalateAfterMs !== null &&
    rules.noEscalationBeforeMs !== null &&
    rules.noEscalationBeforeMs > rules.escalateAfterMs
  )
    problems.push({
      index: null,
      message: `"do not escalate before ${rules.noEscalationBeforeMs} ms" contradicts "escalate after ${rules.escalateAfterMs} ms"`,
    });
  return problems.length ? { ok: false, problems } : { ok: true, rules };
}

/** The rules of constraints already checked at the request's validation (an unreadable one reads as none). */
export function constraintRules(texts: readonly string[]): ConstraintRules {
  const read = readConstraints(texts);
  return read.ok ? read.rules : NO_CONSTRAINTS;
}

/** A budget with the constraints' limits applied: the tightest of budget and constraints wins. */
export function tightenBudget<B extends { maxRetries: number; maxTotalWaitMs: number }>(
  budget: B,
  rules: ConstraintRules,
): B {
  return {
    ...budget,
    maxRetries: Math.min(budget.maxRetries, rules.maxRetries ?? Infinity),
    maxTotalWaitMs: Math.min(budget.maxTotalWaitMs, rules.escalateAfterMs ?? Infinity),
  };
}

function toMs(amount: string, unit: string): number {
  const n = Number(amount);
  if (unit === 'ms' || unit.startsWith('millisecond')) return Math.round(n);
  if (unit.startsWith('h')) return Math.round(n * 3_600_000);
  if (unit === 'm' || unit.startsWith('min')) return Math.round(n * 60_000);
  return Math.round(n * 1_000);
}
