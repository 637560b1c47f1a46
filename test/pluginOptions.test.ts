import { Client, Connection } from '@temporalio/client';
import { DEFAULT_STICKY_SCHEDULE_TO_START_MS } from '../policy/constants';
import { freshSqliteLockService } from '../devkit/temporal';
import { LockwardenPlugin } from '../worker/lockwardenPlugin';

// The worker options the plugin sets in a user's worker, and the ones it leaves to the user.

describe("the plugin's worker options", () => {
  const locks = freshSqliteLockService();
  // Nothing is sent: the plugin only keeps the client for its activities.
  const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const plugin = new LockwardenPlugin({ locks, client });
  afterAll(() => locks.close());

  it('gives the sticky queue room for a burst of hand-offs unless the worker says otherwise', () => {
    const bundle = { workflowBundle: { code: '' } };
    expect(plugin.configureWorker({ taskQueue: 'q', ...bundle }).stickyQueueScheduleToStartTimeout).toBe(
      DEFAULT_STICKY_SCHEDULE_TO_START_MS,
    );
    expect(
      plugin.configureWorker({ taskQueue: 'q', ...bundle, stickyQueueScheduleToStartTimeout: '5s' })
        .stickyQueueScheduleToStartTimeout,
    ).toBe('5s');
  });
});
