// A zookeeper:// URL is parsed at the boundary: its servers and root taken, and what ZooKeeper or
// lockwarden's client cannot do refused with a reason that names the fault and never the password.
import { openLockService } from '../locks/openLockService';
import { parseZookeeperUrl } from '../locks/zookeeperUrl';

describe('zookeeper:// URLs', () => {
  it('takes the servers as a connect string and the path as the root, /lockwarden when it names none', () => {
    expect(parseZookeeperUrl('zookeeper://zk-1:2181,zk-2.internal:2181/teams/billing')).toEqual({
      connectString: 'zk-1:2181,zk-2.internal:2181',
      root: '/teams/billing',
    });
    expect(parseZookeeperUrl('zookeeper://127.0.0.1:2181')).toEqual({
      connectString: '127.0.0.1:2181',
      root: '/lockwarden',
    });
    expect(parseZookeeperUrl('zookeeper://127.0.0.1:2181/')).toMatchObject({ root: '/lockwarden' });
  });

  it.each([
    ['zookeeper://locks:s3cret@zk-1:2181/lockwarden', /carries credentials/],
    ['zookeeper://zk-1:2181/lockwarden?sslrootcert=ca.pem', /no TLS/],
    ['zookeeper://zk-1/lockwarden', /without host:port/],
    ['zookeeper://zk-1:2181,/lockwarden', /without host:port/],
    ['zookeeper://zk-1:2181/a//b', /path ZooKeeper refuses/],
    ['zookeeper://zk-1:2181/a/../b', /path ZooKeeper refuses/],
    ['zookeeper://zk-1:2181/zookeeper/locks', /ZooKeeper's own/],
  ])('refuses %s, saying why and never echoing a password', async (url, why) => {
    const error = await openLockService(url).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.name).toBe('InvalidConfiguration');
    expect(error?.message).toMatch(why);
    expect(error?.message).not.toContain('s3cret');
  });
});
