import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ActivityDeps } from '../../activities';
import { createAnthropicDecider } from '../../activities/anthropicDecider';
import type { EscalationStore } from '../../activities/escalationStore';
import { FakeMessagesApi } from '../../devkit/fakeMessagesApi';
import type { Scenario, ScenarioRun } from './scenarios';
import { withWorker } from './temporalFixture';
import { unique } from '../../devkit/tempFiles';

/** The model configuration of a worker that decides through the fake Messages API. */
export const FAKE_MODEL = {
  apiKey: 'fake',
  model: 'claude-haiku-4-5',
  largeModel: 'claude-sonnet-4-5',
  timeoutMs: 5_000,
  maxTokens: 512,
};

/**
 * Runs one scenario on a fresh worker; a scenario that scripts a model gets a fake Messages API and a
 * worker that decides through the real SDK against it.
 */
export async function runScenario<R extends ScenarioRun>(
  env: TestWorkflowEnvironment,
  scenario: Scenario<R>,
  deps: Omit<ActivityDeps, 'waker'> & { escalations: EscalationStore },
): Promise<R> {
  const model = scenario.model ? await new FakeMessagesApi().start() : null;
  try {
    if (model && scenario.model) model.answer(...scenario.model);
    const decider = model ? createAnthropicDecider({ ...FAKE_MODEL, baseURL: model.baseURL }) : deps.decider;
    const run = await withWorker(env, { ...deps, decider }, (taskQueue) =>
      scenario.run({
        client: env.client,
        taskQueue,
        locks: deps.locks,
        escalations: deps.escalations,
        model,
        tag: unique('s'),
      }),
    );
    const recorded = Object.keys(run.histories).sort();
    if (recorded.join() !== [...scenario.histories].sort().join())
      throw new Error(`${scenario.name} recorded ${recorded.join(', ')}, not the histories it declares`);
    return run;
  } finally {
    await model?.stop();
  }
}
