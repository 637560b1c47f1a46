// A ZooKeeper lock service URL: `zookeeper://host:port[,host:port...][/chroot]`, parsed without the driver.

/** Where lockwarden keeps its nodes when the URL names no path. */
export const DEFAULT_ZOOKEEPER_ROOT = '/lockwarden';

/** A ZooKeeper URL's parts: the connect string ZooKeeper's clients take, and lockwarden's root path. */
export interface ZookeeperTarget {
  connectString: string;
  root: string;
}

const HOST_PORT = /^[A-Za-z0-9.-]+:\d{1,5}$/;
// A node name ZooKeeper accepts: not empty, not `.` or `..`, no control characters.
const SEGMENT = /^(?!\.{1,2}$)[^\u0000-\u001f\u007f/]+$/;

/**
 * Parses a ZooKeeper URL, or null when it is not one (a missing port, an empty or relative path
 * segment). Credentials are refused: lockwarden does not send ZooKeeper digest or SASL credentials,
 * and a URL that carried one would seem to.
 */
export function parseZookeeperUrl(url: string): ZookeeperTarget | null {
  const match = /^zookeeper:\/\/([^/?#]+)(\/[^?#]*)?$/.exec(url);
  if (!match) return null;
  const hosts = match[1]!.split(',');
  if (!hosts.every((host) => HOST_PORT.test(host))) return null;
  const path = match[2] && match[2] !== '/' ? match[2].replace(/\/$/, '') : DEFAULT_ZOOKEEPER_ROOT;
  if (
    !path
      .slice(1)
      .split('/')
      .every((segment) => SEGMENT.test(segment))
  )
    return null;
  if (path === '/zookeeper' || path.startsWith('/zookeeper/')) return null;
  return { connectString: hosts.join(','), root: path };
}
