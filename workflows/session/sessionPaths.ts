import { patched } from '@temporalio/workflow';
import {
  LEAN_WORKFLOW_TASKS,
  HARNESS_RULES_OF_000,
  LEASE_KEPT_BY_ACTIVITY,
  PARK_UNTIL_TOLD,
  REQUEST_CHECKED_IN_ACTIVITY,
} from '../patches';

/** Which patched paths a run takes (see workflows/patches.ts for what each one changed). */
export interface SessionPaths {
  requestCheckedInActivity: boolean;
  parksUntilTold: boolean;
  leaseKeptByActivity: boolean;
  harnessRules: boolean;
  leanWorkflowTasks: boolean;
}

/**
 * Decides a run's patched paths, all at once, before its first await. On replay a patch marker is
 * matched against the workflow task it was recorded in, and a query that comes while a local
 * activity runs can end that task early: a patched() called after an await may then be recorded in
 * a later task than the one its replay is in, and the replay fails (TMPRL1100). Before the first
 * await, every marker is in the run's first task.
 */
export function sessionPaths(): SessionPaths {
  return {
    requestCheckedInActivity: patched(REQUEST_CHECKED_IN_ACTIVITY),
    parksUntilTold: patched(PARK_UNTIL_TOLD),
    leaseKeptByActivity: patched(LEASE_KEPT_BY_ACTIVITY),
    harnessRules: patched(HARNESS_RULES_OF_000),
    leanWorkflowTasks: patched(LEAN_WORKFLOW_TASKS),
  };
}
