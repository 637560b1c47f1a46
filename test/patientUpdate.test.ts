import { WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { sendPatiently } from '../client/patientUpdate';

const timeout = () => new WorkflowUpdateRPCTimeoutOrCancelledError('context deadline exceeded');

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
