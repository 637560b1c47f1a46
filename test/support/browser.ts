import { type Browser, chromium, type Page } from 'playwright-core';

/** Debian's Chromium (scripts/install-test-tools.sh installs it); playwright-core never downloads one. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A headless Chromium that makes no connection of its own beyond the pages it is sent to. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** The text a person sees on the page, its frames included (the UI renders summaries in iframes). */
export async function visibleText(page: Page): Promise<string> {
  const texts = await Promise.all(
    page
      .frames()
      .map((frame) => frame.evaluate<string>('document.body ? document.body.innerText : ""').catch(() => '')),
  );
  return texts.join('\n');
}

/** The Temporal UI's own error page: its server failed to load the page ("Try a refresh"). */
const UI_ERROR_PAGE = "Uh oh. There's an error.";

/**
 * Waits until the page's text, frames included, contains every one of `texts`. The UI's error page
 * is reloaded, as it asks: its server fails a load now and then while the dev server is busy (the
 * whole suite runs beside it), and a page our sessions break fails every reload and still fails here.
 */
export async function waitForText(page: Page, texts: string[], timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await visibleText(page);
    const missing = texts.filter((t) => !text.includes(t));
    if (missing.length === 0) return text;
    if (text.includes(UI_ERROR_PAGE) && Date.now() < deadline) {
      await page.waitForTimeout(500);
      await page.reload({ waitUntil: 'load' }).catch(() => undefined);
      continue;
    }
    if (Date.now() > deadline)
      throw new Error(
        `the page never showed ${JSON.stringify(missing)}; it showed:\n${text.slice(0, 3_000)}`,
      );
    await page.waitForTimeout(250);
  }
}
