// How `lockctl acquire` holds once it has the lease: while it runs (as `etcdctl lock` does), for a
// time, or around a command, keeping the lease alive from its own process and releasing at the end.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Client } from '@temporalio/client';
import type { Lease } from '../policy/lockContract/lockSchemas';
import { keepHolderAlive } from './holderKeepAlive';
import { release } from './lockwardenClient';

/** How lockctl holds: until interrupted, for `ms`, or while `argv` runs. */
export type HoldMode =
  { kind: 'until-interrupted' } | { kind: 'for'; ms: number } | { kind: 'command'; argv: string[] };

/** The exit code lockctl gives when the lease was lost while it held. */
export const LEASE_LOST_EXIT = 6;

/** The signals that end a hold: the command's (forwarded to it), or lockctl's own. */
const ENDING_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** What lockctl holds: the lease, its session and the release key this process was given. */
export interface HeldByLockctl {
  lease: Lease;
  workflowId: string;
  releaseKey: string;
}

/**
 * Holds `held` as `mode` says, with keep-alives from this process (every third of `holderTtlMs`),
 * then releases it, fenced, and answers the exit code: 0, or the command's own (128 + the signal's
 * number when a signal ended it), or LEASE_LOST_EXIT when the session let the lease go first (the
 * command is then sent SIGTERM: what it does from then on is unprotected). A SIGINT, SIGTERM or
 * SIGHUP to lockctl ends the hold early (passed on to the command, which ends the hold as it exits).
 */
export async function holdThenRelease(
  client: Client,
  held: HeldByLockctl,
  holderTtlMs: number,
  mode: HoldMode,
  log: (line: string) => void,
): Promise<number> {
  const kept = keepHolderAlive(client, held.workflowId, held.lease, holderTtlMs);
  // The keep-alives do not keep a process alive on their own; lockctl must live while it holds.
  const alive = setInterval(() => undefined, 1 << 30);
  let code: number;
  try {
    code = await heldUntilDone(held.lease, mode, kept.signal, log);
  } finally {
    clearInterval(alive);
    kept.stop();
  }
  if (kept.signal.aborted) {
    log(`lease lost: ${(kept.signal.reason as Error).message}`);
    return LEASE_LOST_EXIT;
  }
  const answer = await release(client, held.lease, { releaseKey: held.releaseKey });
  log(answer.ok ? `released ${held.lease.key} (token ${held.lease.token})` : `release: ${answer.reason}`);
  return code;
}

// Waits for the end of the hold; answers the exit code the hold itself gives.
function heldUntilDone(lease: Lease, mode: HoldMode, lost: AbortSignal, log: (line: string) => void) {
  if (mode.kind === 'command') return runUnderLease(lease, mode.argv, lost, log);
  return new Promise<number>((done) => {
    const end = () => {
      for (const signal of ENDING_SIGNALS) process.off(signal, end);
      lost.removeEventListener('abort', end);
      clearTimeout(timer);
      done(0);
    };
    for (const signal of ENDING_SIGNALS) process.once(signal, end);
    lost.addEventListener('abort', end, { once: true });
    const timer = mode.kind === 'for' ? setTimeout(end, mode.ms) : undefined;
    log(
      mode.kind === 'for'
        ? `holding ${lease.key} with token ${lease.token} for ${mode.ms} ms`
        : `holding ${lease.key} with token ${lease.token} until interrupted (Ctrl-C releases it)`,
    );
  });
}

/**
 * Runs `argv` with the lease in its environment (LOCKWARDEN_KEY, LOCKWARDEN_HOLDER and
 * LOCKWARDEN_TOKEN: pass the token to the resource's fenced writes) and answers its exit code.
 */
function runUnderLease(lease: Lease, argv: string[], lost: AbortSignal, log: (line: string) => void) {
  const [command, ...args] = argv as [string, ...string[]];
  const child = spawn(command, args, {
    stdio: 'inherit',
    env: {
      ...process.env,
      LOCKWARDEN_KEY: lease.key,
      LOCKWARDEN_HOLDER: lease.holder,
      LOCKWARDEN_TOKEN: lease.token,
    },
  });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  for (const signal of ENDING_SIGNALS) process.on(signal, forward);
  const onLost = () => child.kill('SIGTERM');
  lost.addEventListener('abort', onLost, { once: true });
  log(`holding ${lease.key} with token ${lease.token}: running ${command}`);
  return new Promise<number>((done) => {
    const finish = (code: number) => {
      for (const signal of ENDING_SIGNALS) process.off(signal, forward);
      lost.removeEventListener('abort', onLost);
      done(code);
    };
    child.once('error', (error) => {
      log(`could not run ${command}: ${error.message}`);
      finish(127);
    });
    // A command a signal ended exits as a shell reports it: 128 and the signal's number.
    child.once('exit', (exitCode, signal) =>
      finish(exitCode ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0)),
    );
  });
}
