import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createAnthropicDrafter } from '../../activities/anthropicDrafter';
import type { FakeMessagesApi } from '../../devkit/fakeMessagesApi';
import { silentLog } from '../../devkit/temporal';
import { unique } from '../../devkit/tempFiles';
import { createModelWorker } from '../../worker/modelWorker';
import { FAKE_MODEL } from './runScenario';

/**
 * Runs `work` beside a model worker of its own queue (passed to `work`), drafting with the fake
 * Messages API, in the test's process: the model role as `lockwarden-model-worker` runs it.
 */
export async function withDraftingModelWorker<T>(
  env: TestWorkflowEnvironment,
  model: FakeMessagesApi,
  work: (modelTaskQueue: string) => Promise<T>,
): Promise<T> {
  const modelTaskQueue = unique('model-worker');
  const worker = await createModelWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue: modelTaskQueue,
    decider: null,
    drafter: createAnthropicDrafter({ ...FAKE_MODEL, baseURL: model.baseURL }),
    log: silentLog,
  });
  return worker.runUntil(work(modelTaskQueue));
}
