import { ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { isBusyFrontend, isUpdateLostWithItsTask, sendPatiently } from '../client/patientUpdate';

const timeout = () => new WorkflowUpdateRPCTimeoutOrCancelledError('context deadline exceeded');
// What the client throws when the frontend refused the update's poll, after its own retries.
const grpcError = (code: number, details: string) =>
  Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
const busy = () =>
  new ServiceError('Workflow Update Poll failed', {
    cause: grpcError(8, 'namespace concurrent poller limit exceeded'),
  });

// What the client throws when a history host's loss failed the workflow task carrying the update
// (the server's WorkflowNotReady, as test/cluster.test.ts met it while a history service restarted).
const lostWithItsTask = () =>
  new ServiceError('Workflow Update failed', {
    cause: grpcError(
      9,
      'Unable to perform workflow execution update due to unexpected workflow task failure.',
    ),
  });

describe('an update the server could not take in time', () => {
  it('is sent again under the same update id until the server takes it', async () => {
    const ids: string[] = [];
    const answer = await sendPatiently(async (id) => {
      ids.push(id);
      if (ids.length < 3) throw timeout();
      return 'released';
    });
    expect(answer).toBe('released');
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(1);
  });

  it('gives up after the tolerated number of timeouts, with the last one', async () => {
    let sends = 0;
    await expect(
      sendPatiently(async () => {
        sends++;
        throw timeout();
      }, 4),
    ).rejects.toThrow(WorkflowUpdateRPCTimeoutOrCancelledError);
    expect(sends).toBe(5);
  });

  it('is sent again, after a pause, when the frontend had too many callers waiting', async () => {
    const ids: string[] = [];
    const sentAt: number[] = [];
    const answer = await sendPatiently(
      async (id) => {
        ids.push(id);
        sentAt.push(Date.now());
        if (ids.length < 3) throw busy();
        return 'acquired';
      },
      30,
      50,
    );
    expect(answer).toBe('acquired');
    expect(new Set(ids).size).toBe(1);
    // Each pause is 1 to 2 times the given one.
    for (let i = 1; i < sentAt.length; i++) expect(sentAt[i]! - sentAt[i - 1]!).toBeGreaterThanOrEqual(45);
  });

  it('is sent again, under the same id, when it was lost with a workflow task the server failed', async () => {
    const ids: string[] = [];
    const answer = await sendPatiently(
      async (id) => {
        ids.push(id);
        if (ids.length < 2) throw lostWithItsTask();
        return 'released';
      },
      30,
      10,
    );
    expect(answer).toBe('released');
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(1);
    expect(isUpdateLostWithItsTask(lostWithItsTask())).toBe(true);
    // Another failed precondition is not this, and is not sent again.
    expect(
      isUpdateLostWithItsTask(new ServiceError('x', { cause: grpcError(9, 'failed precondition') })),
    ).toBe(false);
  });

  it('tells a busy frontend from other service errors', () => {
    expect(isBusyFrontend(busy())).toBe(true);
    expect(isBusyFrontend(grpcError(8, 'too many'))).toBe(true);
    expect(isBusyFrontend(new ServiceError('x', { cause: grpcError(9, 'failed precondition') }))).toBe(false);
    expect(isBusyFrontend(new Error('8 RESOURCE_EXHAUSTED'))).toBe(false);
  });

  it('does not send again on any other failure', async () => {
    let sends = 0;
    await expect(
      sendPatiently(async () => {
        sends++;
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(sends).toBe(1);
  });
});
