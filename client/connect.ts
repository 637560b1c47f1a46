// Connecting a client to Temporal, from options, the environment or a connection profile.
import { Client, type ClientPlugin } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { connectOrExplain } from '../temporal/connectFailure';
import { loadTemporalTarget, type TemporalProfileOptions } from '../temporal/connectionProfile';

/**
 * How a client reaches Temporal. Unset fields come from the TEMPORAL_* variables and the profile in
 * Temporal's config file, as the `temporal` CLI reads them; absent everything, the local dev server.
 */
export type ClientTarget = Omit<TemporalProfileOptions, 'env'>;

/**
 * Connects a Temporal client; the caller closes `client.connection` when done. `plugins` go to the
 * client: Temporal's OpenTelemetry plugin (`tracingFromEnv`) makes each acquisition one trace.
 */
export async function connectClient(
  target: ClientTarget = {},
  plugins: ClientPlugin[] = [],
): Promise<Client> {
  const temporal = loadTemporalTarget(target);
  const connection = await connectOrExplain(temporal, () => connectTemporal(temporal.connectionOptions));
  return new Client({ connection, namespace: temporal.namespace, plugins });
}
