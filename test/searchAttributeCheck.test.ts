import { missingSearchAttributes } from '../worker/searchAttributeCheck';
import { sessionFixture } from './support/temporalFixture';

// The worker refuses to start on a namespace missing one of the search attributes sessions upsert.
describe("the worker's search attribute check", () => {
  const fixture = sessionFixture();

  it('finds every attribute registered on the dev server, and names one that is not', async () => {
    await expect(missingSearchAttributes(fixture.env.client, 'default')).resolves.toEqual([]);
    await expect(
      missingSearchAttributes(fixture.env.client, 'default', ['LockKey', 'LockNoSuchAttribute']),
    ).resolves.toEqual(['LockNoSuchAttribute']);
  });
});
