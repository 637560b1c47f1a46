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
 * Parses a ZooKeeper URL: its parts, or what is wrong with it (never echoing the URL, which could
 * hold a password). Credentials are refused: lockwarden's ZooKeeper client sends no digest or SASL
 * credentials and speaks no TLS, and a URL that carried them would seem to be used with them.
 */
export function parseZookeeperUrl(url: string): ZookeeperTarget | { problem: string } {
  const match = /^zookeeper:\/\/([^/?#]*)(\/[^?#]*)?(\?.*)?$/.exec(url);
  if (!match) return { problem: 'is not zookeeper://host:port[,host:port][/chroot]' };
  const [, authority, rawPath, query] = match;
  if (authority!.includes('@'))
    return {
      problem:
        'carries credentials: lockwarden sends ZooKeeper no credentials (reach it over a network you trust)',
    };
  if (query) return { problem: 'has query parameters: lockwarden speaks no TLS to ZooKeeper and takes none' };
  const hosts = authority!.split(',');
  if (!hosts.every((host) => HOST_PORT.test(host)))
    return { problem: 'names a server without host:port (zookeeper://host:port[,host:port][/chroot])' };
  const root = rawPath && rawPath !== '/' ? rawPath.replace(/\/$/, '') : DEFAULT_ZOOKEEPER_ROOT;
  if (
    !root
      .slice(1)
      .split('/')
      .every((segment) => SEGMENT.test(segment))
  )
    return {
      problem: 'has a path ZooKeeper refuses (an empty, "." or ".." segment, or a control character)',
    };
  if (root === '/zookeeper' || root.startsWith('/zookeeper/'))
    return { problem: "has a path under /zookeeper, which is ZooKeeper's own" };
  return { connectString: hosts.join(','), root };
}
