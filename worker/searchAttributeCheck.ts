// The check at start that the namespace has registered every search attribute sessions upsert.
import type { Client } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes';

/**
 * The search attributes lockwarden's sessions upsert that the namespace has not registered. A session
 * that upserts an unregistered one fails its workflow task over and over, so the worker checks at
 * start instead (docs/operations.md: registering them on your cluster).
 */
export async function missingSearchAttributes(
  client: Client,
  namespace: string,
  wanted: readonly string[] = Object.values(SEARCH_ATTRIBUTES).map((key) => key.name),
): Promise<string[]> {
  const registered = await client.connection.operatorService.listSearchAttributes({ namespace });
  const names = new Set(Object.keys(registered.customAttributes ?? {}));
  return wanted.filter((name) => !names.has(name));
}
