// The phases of a session: a leaf module, so the constants, the session's types and the operator's
// answer can all name them without importing one another.

/** The phases of a session, in its `state` query and its `LockState` search attribute. */
export const SESSION_PHASES = [
  'acquiring',
  'backing-off',
  'queued',
  'escalated',
  'holding',
  'released',
  'lease-lost',
  'abandoned',
  'halted',
] as const;
export type SessionPhase = (typeof SESSION_PHASES)[number];
