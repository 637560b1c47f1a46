import { getExternalWorkflowHandle, log, workflowInfo } from '@temporalio/workflow';
import { acquisitionWorkflowId } from '../../policy/constants';
import type { DeadlockNotice, LeaseAnswer } from '../../policy/session';
import { deadlockFound, lockReleased, lockSessionUpdate } from '../../temporal/messages';

// Signals a session sends to other workflows. A session that has ended cannot be told anything; that
// is logged and not an error.

/** Wakes the session of `requester` on `key`: the key was released, or it heads a free queue. */
export async function wakeSession(key: string, requester: string): Promise<void> {
  try {
    await getExternalWorkflowHandle(acquisitionWorkflowId(key, requester)).signal(lockReleased);
  } catch (error) {
    log.info('no running session to wake', { key, requester, error: String(error) });
  }
}

/** Tells the waiting session of `requester` on `key` about a deadlock it is part of. */
export async function tellOfDeadlock(key: string, requester: string, notice: DeadlockNotice): Promise<void> {
  try {
    await getExternalWorkflowHandle(acquisitionWorkflowId(key, requester)).signal(deadlockFound, notice);
  } catch (error) {
    log.info('no running session to tell of the deadlock', { key, requester, error: String(error) });
  }
}

/** Tells the workflow that started this session through withLock what became of it. */
export async function tellParent(answer: LeaseAnswer): Promise<void> {
  const parent = workflowInfo().parent;
  if (parent)
    await getExternalWorkflowHandle(parent.workflowId, parent.runId).signal(
      lockSessionUpdate,
      workflowInfo().workflowId,
      answer,
    );
}
