/**
 * The operator constraints a request may carry, in the forms people write them (the retry prompt's
 * `[CONSTRAINTS]`, seed 000's escape hatch). The forms below are parsed when the request is checked
 * and enforced by the guardrails as hard limits; any other text is accepted as advisory (shown to the
 * model as data, marked "not enforced" in the session's state and in a warning line), unless the
 * worker's operator turns on strict constraints (LOCKWARDEN_STRICT_CONSTRAINTS), which refuses it.
 * Case is ignored, a leading "must"/"should" and a trailing full stop are allowed:
 *
 *   at most N retries          (also: "not exceed N retries", "no more than N retries", "max N retries")
 *   escalate after D           (also: "escalate to on-call after D", "escalate to #team after D of waiting")
 *   escalate to WHOM           (also: "page WHOM"): whom the page is for, a field of the webhook
 *                              payload and the escalation record; "escalate to WHOM after D" sets both
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
  /** Whom an escalation is for ("escalate to #payments-oncall"), as written; the first one given wins. */
  escalationContact: string | null;
  /** Constraints in none of the forms above: given to the model as data, not enforced. */
  advisory: string[];
}

export const NO_CONSTRAINTS: ConstraintRules = {
  maxRetries: null,
  escalateAfterMs: null,
  noEscalationBeforeMs: null,
  fifo: false,
  escalationContact: null,
  advisory: [],
};

type Parsed =
  | { kind: 'max-retries'; n: number }
  | { kind: 'escalate-after'; ms: number; contact: string | null }
  | { kind: 'contact'; contact: string }
  | { kind: 'no-escalation-before'; ms: number }
  | { kind: 'fifo' };

const DURATION = String.raw`(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)`;
const FORMS: { pattern: RegExp; read: (m: RegExpExecArray) => Parsed }[] = [
  {
    pattern: /^(?:not exceed|at most|no more than|max(?:imum(?: of)?)?)\s+(\d+)\s+retr(?:y|ies)$/i,
    read: (m) => ({ kind: 'max-retries', n: Number(m[1]) }),
  },
  {
    pattern: new RegExp(String.raw`^escalate(?: to (.+?))? after ${DURATION}(?: of waiting)?$`, 'i'),
    read: (m) => ({ kind: 'escalate-after', ms: toMs(m[2]!, m[3]!), contact: contactOf(m[1]) }),
  },
  {
    pattern: new RegExp(String.raw`^(?:do not|not|never) escalate before ${DURATION}(?: of waiting)?$`, 'i'),
    read: (m) => ({ kind: 'no-escalation-before', ms: toMs(m[1]!, m[2]!) }),
  },
  { pattern: /^preserve fifo(?: ordering| order)?$/i, read: () => ({ kind: 'fifo' }) },
  {
    pattern: /^(?:escalate to|page) (\S.{0,199})$/i,
    read: (m) => ({ kind: 'contact', contact: m[1]!.trim() }),
  },
];

// "on-call" names no one in particular: the worker's own on-call configuration answers.
function contactOf(whom: string | undefined): string | null {
  return whom && !/^on-?call$/i.test(whom.trim()) ? whom.trim() : null;
}

/** The forms accepted, for error messages and docs/operations.md. */
const CONSTRAINT_FORMS = [
  'at most N retries',
  'escalate after D',
  'do not escalate before D',
  'preserve FIFO ordering',
  'escalate to WHOM',
] as const;

/** Reads one constraint, or returns null when it is none of the accepted forms. */
export function parseConstraint(text: string): Parsed | null {
  const plain = text
    .trim()
    .replace(/\s+/g, ' ')
    .replace(/^(?:must|should) /i, '')
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
 * Adds up a request's constraints, the tightest of each kind winning; a text in none of the forms is
 * advisory. Returns the problems instead when two contradict each other, or, when `strict`, when one
 * is not in a known form.
 */
export function readConstraints(
  texts: readonly string[],
  { strict = false }: { strict?: boolean } = {},
): { ok: true; rules: ConstraintRules } | { ok: false; problems: ConstraintProblem[] } {
  const rules: ConstraintRules = { ...NO_CONSTRAINTS, advisory: [] };
  const problems: ConstraintProblem[] = [];
  texts.forEach((text, i) => {
    const parsed = parseConstraint(text);
    if (!parsed) {
      if (strict)
        problems.push({
          index: i,
          message: `${JSON.stringify(text)} is not understood, and this worker enforces constraints strictly (LOCKWARDEN_STRICT_CONSTRAINTS); write one of: ${CONSTRAINT_FORMS.join('; ')}`,
        });
      else rules.advisory.push(text);
      return;
    }
    if (parsed.kind === 'max-retries') rules.maxRetries = Math.min(rules.maxRetries ?? Infinity, parsed.n);
    if (parsed.kind === 'escalate-after')
      rules.escalateAfterMs = Math.min(rules.escalateAfterMs ?? Infinity, parsed.ms);
    if ((parsed.kind === 'escalate-after' || parsed.kind === 'contact') && parsed.contact)
      rules.escalationContact ??= parsed.contact;
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
