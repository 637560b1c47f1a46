// The workflow sandbox's time limit for one activation: lockwarden's default and its reason.
import type { Duration } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';
import { DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS } from '../policy/constants';

/**
 * The sandbox's time limit for one workflow activation. `Worker.create` reads it from the options it
 * is given (they are spread over its 5 s default), though SDK 1.24's public `WorkerOptions` type does
 * not list it yet: this is the one place that says so.
 */
interface IsolateTimeoutOption {
  isolateExecutionTimeout?: Duration;
}

/** `options` with an activation time limit: the one already set there, else `ms`, else lockwarden's default. */
export function withIsolateTimeout(
  options: WorkerOptions & IsolateTimeoutOption,
  ms: number = DEFAULT_ISOLATE_EXECUTION_TIMEOUT_MS,
): WorkerOptions {
  const limited: WorkerOptions & IsolateTimeoutOption = {
    ...options,
    isolateExecutionTimeout: options.isolateExecutionTimeout ?? ms,
  };
  return limited;
}
