import { SESSION_PHASES } from './session';

/** Task queue the worker polls when none is configured; clients start sessions on the same one. */
export const DEFAULT_TASK_QUEUE = 'lockwarden';

/** Namespace used when none is configured (the dev server's default). */
export const DEFAULT_NAMESPACE = 'default';

/** Temporal's frontend when none is configured: the local dev server. */
export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

/** The Temporal Web UI when none is configured: the local dev server's. */
export const DEFAULT_UI_URL = 'http://localhost:8233';

/** The lock service's observed latency floor: no retry is ever scheduled sooner than this. */
export const LATENCY_FLOOR_MS = 50;

/** Where a session stands, as shown in its LockState search attribute (a fenced release adds one). */
export const LOCK_STATES = [...SESSION_PHASES, 'release-refused'] as const;
export type LockState = (typeof LOCK_STATES)[number];

export { acquisitionWorkflowId, releaseWorkflowId } from './identifiers';
