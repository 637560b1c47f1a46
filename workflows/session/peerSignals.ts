// Signals a session sends to other workflows. A session that has ended cannot be told anything; that
// is logged and not an error.
import { getExternalWorkflowHandle, log, workflowInfo } from '@temporalio/workflow';
import { acquisitionWorkflowId } from '../../policy/constants';
import type { DeadlockNotice, SessionNews } from '../../policy/sessionModel/sessionTypes';
import { deadlockFound, lockSessionUpdate } from '../../temporal/messages';

/** Tells the waiting session of `requester` on `key` about a deadlock it is part of. */
export async function tellOfDeadlock(key: string, requester: string, notice: DeadlockNotice): Promise<void> {
  try {
    await getExternalWorkflowHandle(acquisitionWorkflowId(key, requester)).signal(deadlockFound, notice);
  } catch (error) {
    log.info('no running session to tell of the deadlock', { key, requester, error: String(error) });
  }
}

/** Tells the workflow that started this session through withLock what became of it. */
export async function tellParent(answer: SessionNews): Promise<void> {
  const parent = workflowInfo().parent;
  if (parent)
    await getExternalWorkflowHandle(parent.workflowId, parent.runId).signal(
      lockSessionUpdate,
      workflowInfo().workflowId,
      answer,
    );
}
