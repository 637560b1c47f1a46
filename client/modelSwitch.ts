// The operators' kill switch for the model path, from the client: off, on, and what it is now.
import { type Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import {
  MODEL_SWITCH_WORKFLOW_ID,
  type ModelSwitchChange,
  type ModelSwitchState,
} from '../policy/decisions/modelSwitch';
import { describeIssues, InvalidLockRequestError } from '../policy/errors';

const changeSchema = z.strictObject({
  operator: z.string().trim().min(1).max(200),
  reason: z.string().trim().min(1).max(1_000),
});

function checked(change: ModelSwitchChange): ModelSwitchChange {
  const parsed = changeSchema.safeParse(change);
  if (!parsed.success) throw new InvalidLockRequestError('model switch', describeIssues(parsed.error));
  return parsed.data;
}

/**
 * Turns model decisions and drafts off for every worker of the namespace, without a deploy: starts
 * the switch's workflow on `taskQueue` (a lockwarden worker's), which runs until `switchModelOn`
 * terminates it. Starting it needs no worker: the server records it, and workers read its status.
 * Workers see it within a few seconds (MODEL_SWITCH_READ_EVERY_MS). Off already: says so, unchanged.
 */
export async function switchModelOff(
  client: Client,
  change: ModelSwitchChange,
  taskQueue: string,
): Promise<ModelSwitchState & { changed: boolean }> {
  const off = checked(change);
  try {
    await client.workflow.start('modelSwitchedOff', {
      workflowId: MODEL_SWITCH_WORKFLOW_ID,
      taskQueue,
      args: [off],
      memo: { operator: off.operator, reason: off.reason },
    });
    return { ...(await modelSwitchStatus(client)), changed: true };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      return { ...(await modelSwitchStatus(client)), changed: false };
    throw error;
  }
}

/**
 * Turns the model back on: terminates the switch's workflow, the reason naming who and why (kept in
 * its history). A termination needs no worker, so the brake comes off even when none polls the queue
 * the switch was started on. On already: unchanged.
 */
export async function switchModelOn(
  client: Client,
  change: ModelSwitchChange,
): Promise<ModelSwitchState & { changed: boolean }> {
  const on = checked(change);
  try {
    await client.workflow
      .getHandle(MODEL_SWITCH_WORKFLOW_ID)
      .terminate(`model switched on by ${on.operator}: ${on.reason}`);
    return { model: 'on', changed: true };
  } catch (error) {
    // Not found, or already ended: the model is on.
    if (error instanceof WorkflowNotFoundError) return { model: 'on', changed: false };
    throw error;
  }
}

/** The switch now: on, or off with who turned it off, why and since when (as workers read it). */
export async function modelSwitchStatus(client: Client): Promise<ModelSwitchState> {
  try {
    const info = await client.workflow.getHandle(MODEL_SWITCH_WORKFLOW_ID).describe();
    if (info.status.name !== 'RUNNING') return { model: 'on' };
    const memo = (info.memo ?? {}) as Record<string, unknown>;
    return {
      model: 'off',
      operator: String(memo.operator ?? 'unknown'),
      reason: String(memo.reason ?? 'unknown'),
      since: info.startTime.toISOString(),
    };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { model: 'on' };
    throw error;
  }
}
