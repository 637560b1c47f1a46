import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { FileEscalationStore } from '../activities/escalationStore';
import { acquire, release, startAcquisition, stateOf } from '../client/lockwardenClient';
import { DEFAULT_UI_URL } from '../policy/constants';
import { launchChromium, waitForText } from './support/browser';
import { sessionFixture, silentLog, withWorker } from './support/temporalFixture';
import { freshSqlitePath, unique } from '../devkit/tempFiles';
import { waitFor } from './support/waitFor';

// What an operator sees of a holding session and a contended one in the Temporal UI that the dev
// server serves, in a real browser. Screenshots land in .data/ui/ for a person to look at.
const SCREENSHOTS = path.join(__dirname, '..', '.data', 'ui');
const UI = process.env.TEMPORAL_UI_URL ?? DEFAULT_UI_URL;

describe('the Temporal UI in Chromium', () => {
  const fixture = sessionFixture();
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Opens a session's page on `tab` and waits for `texts`; saves a screenshot named `shot`. */
  async function show(page: Page, uiUrl: string, tab: string, texts: string[], shot: string): Promise<void> {
    await page.goto(uiUrl.replace(/\/history$/, `/${tab}`), { waitUntil: 'load' });
    await waitForText(page, texts);
    await page.screenshot({ path: path.join(SCREENSHOTS, `${shot}.png`), fullPage: true });
  }

  it('shows a holding and a contended session: search attributes, static summary, timer summaries and current details', async () => {
    const started = Date.now();
    const escalations = new FileEscalationStore(freshSqlitePath().replace(/\.sqlite$/, '.jsonl'));
    await withWorker(
      fixture.env,
      { locks: fixture.locks, log: silentLog, escalations },
      async (taskQueue) => {
        const key = unique('billing/ui');
        const placement = { taskQueue, uiBaseUrl: UI };
        const holder = await acquire(
          fixture.env.client,
          { key, requester: 'replica-a', ttlMs: 30_000 },
          placement,
        );
        const waiter = await startAcquisition(fixture.env.client, { key, requester: 'replica-b' }, placement);
        await waitFor(
          'replica-b parked',
          async () => (await stateOf(fixture.env.client, waiter.workflowId)).phase === 'queued',
        );
        const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
        try {
          // The contended session: its timeline, its summaries, where it stands, and how to find it.
          await show(
            page,
            waiter.uiUrl,
            'history',
            [waiter.workflowId, 'acquireLock', 'parked up to', 'at place 1 behind replica-a'],
            'contended-history',
          );
          await show(
            page,
            waiter.uiUrl,
            'user-metadata',
            [
              `acquire ${key} for replica-b`,
              'lock held by another client; place 1 in the queue, woken by a release',
              'fast path, attempt 1',
              'retry decision, attempt 1',
              'at place 1 behind replica-a, attempt 1 of 21: a release wakes it',
            ],
            'contended-user-metadata',
          );
          await show(
            page,
            waiter.uiUrl,
            'search-attributes',
            [`"LockKey": "${key}"`, '"LockRequester": "replica-b"', '"LockState": "queued"'],
            'contended-search-attributes',
          );

          // The holding session: its token, its lease keeper, and its state.
          await show(
            page,
            holder.session.uiUrl,
            'user-metadata',
            [
              `acquire ${key} for replica-a`,
              `holding ${key} with token ${holder.lease.token}`,
              `keep token ${holder.lease.token}: renew every 10000 ms`,
            ],
            'holding-user-metadata',
          );
          await show(
            page,
            holder.session.uiUrl,
            'search-attributes',
            [`"LockKey": "${key}"`, '"LockRequester": "replica-a"', '"LockState": "holding"'],
            'holding-search-attributes',
          );
        } finally {
          await page.close();
        }
        await release(fixture.env.client, holder.lease);
        await waitFor(
          'replica-b holding',
          async () => (await stateOf(fixture.env.client, waiter.workflowId)).phase === 'holding',
        );
        await release(fixture.env.client, { key, holder: 'replica-b' });
      },
    );
    // Each screenshot is a PNG of this run's page at the viewport's width (read from its IHDR header).
    for (const shot of ['contended-history', 'contended-user-metadata', 'holding-search-attributes']) {
      const file = path.join(SCREENSHOTS, `${shot}.png`);
      const png = fs.readFileSync(file);
      expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
      expect(png.readUInt32BE(16)).toBe(1400);
      expect(png.readUInt32BE(20)).toBeGreaterThanOrEqual(1000);
      expect(fs.statSync(file).mtimeMs).toBeGreaterThanOrEqual(started);
    }
  });
});
