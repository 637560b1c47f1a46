// The model kill switch's workflow: while it runs, no worker of the namespace calls a model.
import { ApplicationFailure, condition, defineQuery, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  MODEL_SWITCH_QUERY,
  type ModelSwitchChange,
  type ModelSwitchState,
  switchChangeProblem,
} from '../policy/decisions/modelSwitch';

export const modelSwitchQuery = defineQuery<ModelSwitchState>(MODEL_SWITCH_QUERY);

/**
 * The model is off while this runs: `lockctl model off` starts it under MODEL_SWITCH_WORKFLOW_ID, and
 * workers read its status (activities/modelSwitch.ts), not its answers, so it works whether or not a
 * worker runs it. `lockctl model on` terminates it, the reason naming who and why; its history keeps
 * both changes. It does nothing else, so its history stays a few events long whatever it lasts.
 */
export async function modelSwitchedOff(off: ModelSwitchChange): Promise<never> {
  const problem = switchChangeProblem(off);
  if (problem) throw ApplicationFailure.nonRetryable(`model switch: ${problem}`, 'InvalidOperatorAnswer');
  const since = workflowInfo().startTime.toISOString();
  setHandler(modelSwitchQuery, () => ({ model: 'off', operator: off.operator, reason: off.reason, since }));
  await condition(() => false);
  throw new Error('unreachable: the switch ends only by termination');
}
