// What `lockctl acquire` shows while it waits: one line of progress, from the session's state
// query.
import type { Client } from '@temporalio/client';
import type { SessionNews } from '../policy/sessionModel/sessionTypes';
import { awaitLeaseOf, stateOf } from './lockwardenClient';
import { progressLine } from './present';

/** How long without an answer to the state query before the user is told no worker answers. */
const NO_WORKER_NOTICE_MS = 5_000;

/** Where progress goes: a terminal gets one line rewritten in place, anything else a line per change. */
interface ProgressOutput {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Waits for the session `workflowId` to hold its lease or end, showing its progress meanwhile from
 * its state query every `everyMs`. The wait is `news` when the caller already has one (the wait that
 * came with the session's start), else `awaitLeaseOf`. A query that fails (a worker restarting)
 * skips a beat; the wait itself is not affected.
 */
export async function awaitLeaseShowingProgress(
  client: Client,
  workflowId: string,
  out: ProgressOutput,
  everyMs = 500,
  news: Promise<SessionNews> = awaitLeaseOf(client, workflowId),
): Promise<SessionNews> {
  const started = Date.now();
  let done = false;
  const answer = news.finally(() => {
    done = true;
  });
  let lastShown = '';
  let unanswered = false;
  let shownOnTty = false;
  while (!done) {
    const tick = new Promise((resolve) => setTimeout(resolve, everyMs));
    await Promise.race([answer.catch(() => undefined), tick]);
    if (done) break;
    const state = await stateOf(client, workflowId).catch(() => null);
    if (!state) {
      // A query needs a worker: none has answered yet (none polls the queue, or it is restarting).
      if (!unanswered && Date.now() - started > NO_WORKER_NOTICE_MS)
        out.write(`no worker has answered for ${workflowId} yet: is one polling its task queue?\n`);
      unanswered ||= Date.now() - started > NO_WORKER_NOTICE_MS;
      continue;
    }
    const line = progressLine(state, Date.now() - started);
    if (out.isTTY) {
      out.write(`\r\x1b[2K${line}`);
      shownOnTty = true;
    } else {
      // Without a terminal, a line only when something other than the elapsed time changed.
      const gist = line.replace(/^\S+ [^·]+·/, '');
      if (gist !== lastShown) out.write(`${line}\n`);
      lastShown = gist;
    }
  }
  if (shownOnTty) out.write('\n');
  return answer;
}
