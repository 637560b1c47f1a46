// The operators' kill switch for the model path (seed 003, red flag 7): its name, its messages, and
// how fresh a worker's reading of it must be. Pure: the workflow, the activities and lockctl share it.

/**
 * The switch's workflow id: one per namespace. While a workflow of this id runs, the model is off for
 * every worker of the namespace: decisions come from the policy and drafts from the template.
 */
export const MODEL_SWITCH_WORKFLOW_ID = 'lockwarden/model-switch';

/** The query that answers who turned the model off, when and why. */
export const MODEL_SWITCH_QUERY = 'modelSwitch';

/**
 * How long a worker trusts its last reading of the switch: within this, and a describe's round trip,
 * of `lockctl model off` no model call is made. One describe per worker per interval, and only when
 * a model call is about to be made: an idle worker reads nothing.
 */
export const MODEL_SWITCH_READ_EVERY_MS = 2_000;

/** Who flipped the switch, and why: both required, as for an operator's answer to an escalation. */
export interface ModelSwitchChange {
  operator: string;
  reason: string;
}

/** The switch as a worker or lockctl reads it. */
export type ModelSwitchState =
  { model: 'on' } | { model: 'off'; operator: string; reason: string; since: string };

/** The problem with a change's fields, or null: a plain check the workflow can run without zod. */
export function switchChangeProblem(change: unknown): string | null {
  const c = change as Partial<ModelSwitchChange> | null;
  if (typeof c !== 'object' || c === null) return 'must be an object { operator, reason }';
  for (const field of ['operator', 'reason'] as const) {
    const value = c[field];
    if (typeof value !== 'string' || !value.trim()) return `${field}: must be a non-empty string`;
    if (value.length > (field === 'operator' ? 200 : 1_000)) return `${field}: is too long`;
  }
  return null;
}
