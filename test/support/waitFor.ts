import { setTimeout as delay } from 'node:timers/promises';

/** Polls `condition` until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor(
  what: string,
  condition: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await delay(50);
  }
}
