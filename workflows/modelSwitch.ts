// The model kill switch's workflow: while it runs, no worker of the namespace calls a model.
import {
  ApplicationFailure,
  condition,
  defineQuery,
  defineUpdate,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  MODEL_SWITCH_QUERY,
  type ModelSwitchChange,
  type ModelSwitchState,
  SWITCH_MODEL_ON_UPDATE,
  switchChangeProblem,
} from '../policy/decisions/modelSwitch';

export const switchModelOnUpdate = defineUpdate<ModelSwitchChange, [ModelSwitchChange]>(SWITCH_MODEL_ON_UPDATE);
export const modelSwitchQuery = defineQuery<ModelSwitchState>(MODEL_SWITCH_QUERY);

/**
 * The model is off while this runs (`lockctl model off` starts it under MODEL_SWITCH_WORKFLOW_ID;
 * workers read its status, policy/decisions/modelSwitch.ts). `lockctl model on` sends the update that
 * ends it; the history keeps who turned the model off and on, and why. It does nothing else, so its
 * history is three events long whatever it lasts.
 */
export async function modelSwitchedOff(off: ModelSwitchChange): Promise<ModelSwitchChange & { offFor: string }> {
  const problem = switchChangeProblem(off);
  if (problem) throw ApplicationFailure.nonRetryable(`model switch: ${problem}`, 'InvalidOperatorAnswer');
  const since = workflowInfo().startTime.toISOString();
  let on: ModelSwitchChange | undefined;
  setHandler(modelSwitchQuery, () => ({ model: 'off', operator: off.operator, reason: off.reason, since }));
  setHandler(
    switchModelOnUpdate,
    (change) => {
      on = change;
      return change;
    },
    {
      validator: (change) => {
        const bad = switchChangeProblem(change);
        if (bad) throw new Error(`switchModelOn: ${bad}`);
      },
    },
  );
  await condition(() => on !== undefined);
  return { ...on!, offFor: `${Date.now() - workflowInfo().startTime.getTime()} ms` };
}
