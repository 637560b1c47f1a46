// Connecting a client to Temporal, from options or the environment.
import { Client } from '@temporalio/client';
import { connectTemporal } from '../temporal/closeSafeRetries';
import { DEFAULT_NAMESPACE, DEFAULT_TEMPORAL_ADDRESS } from '../policy/constants';

/** How a client reaches Temporal; defaults match the local dev server. */
export interface ClientTarget {
  address?: string;
  namespace?: string;
}

/** Connects a Temporal client; the caller closes `client.connection` when done. */
export async function connectClient(target: ClientTarget = {}): Promise<Client> {
  const connection = await connectTemporal({
    address: target.address ?? process.env.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS,
  });
  return new Client({
    connection,
    namespace: target.namespace ?? process.env.TEMPORAL_NAMESPACE ?? DEFAULT_NAMESPACE,
  });
}
