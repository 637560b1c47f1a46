// The optional drivers (redis, pg, etcd3, node-zookeeper-client), loaded only when a URL of their scheme is opened.
import { MissingDriverError } from '../policy/errors';

/**
 * The driver packages lockwarden loads only when a URL of their scheme is opened, with the versions
 * it is tested against (its optional peer dependencies: package.json says the same).
 */
const OPTIONAL_DRIVERS = {
  redis: '^6.3.1',
  pg: '^8.23.1',
  etcd3: '^1.1.2',
  'node-zookeeper-client': '^1.1.3',
} as const;
type OptionalDriver = keyof typeof OPTIONAL_DRIVERS;

/**
 * Loads a module that needs the driver package `driver`, so a project that never opens that backend
 * need not install it; a missing driver becomes a MissingDriverError naming the package to install.
 */
export async function withDriver<T>(
  driver: OptionalDriver,
  what: string,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissingModule(error, driver)) throw new MissingDriverError(what, driver, OPTIONAL_DRIVERS[driver]);
    throw error;
  }
}

// Node's "Cannot find module 'pg'" for the driver itself (not for some module the driver needs).
function isMissingModule(error: unknown, driver: string): boolean {
  if (!(error instanceof Error) || (error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') return false;
  return error.message.includes(`'${driver}'`);
}
