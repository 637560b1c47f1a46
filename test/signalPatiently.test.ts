import { ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { signalPatiently } from '../activities/sessionSignals';

// A wake-up sent while a history host hands its shards over: the client's own retries can run out
// before the shard has a new owner (test/cluster.test.ts met it while a history service restarted).
const unavailable = () => new ServiceError('Failed to signal Workflow');

describe('a wake-up the server could not take yet', () => {
  it('is sent again after each pause until it is delivered', async () => {
    let sends = 0;
    await signalPatiently(async () => {
      if (++sends < 3) throw unavailable();
    }, [5, 5]);
    expect(sends).toBe(3);
  });

  it('gives up with the last error once the pauses are spent', async () => {
    let sends = 0;
    await expect(
      signalPatiently(async () => {
        sends++;
        throw unavailable();
      }, [5, 5]),
    ).rejects.toThrow('Failed to signal Workflow');
    expect(sends).toBe(3);
  });

  it('is not sent again to a session that is gone', async () => {
    let sends = 0;
    await expect(
      signalPatiently(async () => {
        sends++;
        throw new WorkflowNotFoundError('workflow execution already completed', 'lock/k/r', undefined);
      }, [5, 5]),
    ).rejects.toThrow(WorkflowNotFoundError);
    expect(sends).toBe(1);
  });
});
