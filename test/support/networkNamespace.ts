import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

/**
 * A network namespace of a test's own, joined to the host by one veth pair, whose traffic to the host
 * is refused by the host's firewall except on the ports the test opens. Nothing else is reachable
 * from inside: its loopback is its own, and it has no route beyond the pair. Needs root (CI runs as
 * root); creating it fails loudly otherwise.
 */
export class NetworkNamespace {
  readonly name: string;
  /** The host's end of the pair: the only address the namespace can reach. */
  readonly hostAddress: string;
  readonly innerAddress: string;
  private readonly hostLink: string;
  private readonly rules: string[][] = [];

  constructor(tag: string) {
    // A /30 of 10.199.0.0/16 per process, so suites in parallel do not meet.
    const slot = (process.pid % 16_000) * 4;
    const [a, b] = [Math.floor(slot / 256), slot % 256];
    this.name = `lw-${tag}-${process.pid}`.slice(0, 15);
    this.hostLink = `lwh${process.pid}`.slice(0, 15);
    this.hostAddress = `10.199.${a}.${b + 1}`;
    this.innerAddress = `10.199.${a}.${b + 2}`;
  }

  /** Creates the namespace and the pair; until `allowOnly`, the host's end refuses nothing. */
  open(): this {
    const innerLink = `${this.hostLink}i`.slice(0, 15);
    ip('netns', 'add', this.name);
    ip('link', 'add', this.hostLink, 'type', 'veth', 'peer', 'name', innerLink);
    ip('link', 'set', innerLink, 'netns', this.name);
    ip('addr', 'add', `${this.hostAddress}/30`, 'dev', this.hostLink);
    ip('link', 'set', this.hostLink, 'up');
    this.inside('ip', 'addr', 'add', `${this.innerAddress}/30`, 'dev', innerLink);
    this.inside('ip', 'link', 'set', innerLink, 'up');
    this.inside('ip', 'link', 'set', 'lo', 'up');
    return this;
  }

  /** Refuses everything from the namespace to the host but TCP to `ports` on the host's end. */
  allowOnly(ports: number[]): void {
    // Inserted in reverse: the accept for the opened ports ends up above the refusal of the rest.
    this.rule(['-i', this.hostLink, '-j', 'REJECT', '--reject-with', 'icmp-port-unreachable']);
    this.rule([
      '-i',
      this.hostLink,
      '-p',
      'tcp',
      '-m',
      'multiport',
      '--dports',
      ports.join(','),
      '-j',
      'ACCEPT',
    ]);
  }

  /** Runs a command inside the namespace and returns its output. */
  inside(command: string, ...args: string[]): string {
    return execFileSync('ip', ['netns', 'exec', this.name, command, ...args], { encoding: 'utf8' });
  }

  /** Starts a long-running process inside the namespace. */
  spawnInside(command: string, args: string[], options: SpawnOptions): ChildProcess {
    return spawn('ip', ['netns', 'exec', this.name, command, ...args], options);
  }

  /** Removes the firewall rules, the pair and the namespace; safe to call twice. */
  close(): void {
    for (const rule of this.rules.splice(0))
      quietly(() => execFileSync('iptables', ['-D', 'INPUT', ...rule]));
    quietly(() => ip('link', 'del', this.hostLink));
    quietly(() => ip('netns', 'del', this.name));
  }

  private rule(rule: string[]): void {
    execFileSync('iptables', ['-I', 'INPUT', ...rule]);
    this.rules.push(rule);
  }
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function quietly(step: () => unknown): void {
  try {
    step();
  } catch {
    // already gone
  }
}
