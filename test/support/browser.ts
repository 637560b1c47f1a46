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

/** Waits until the page's text, frames included, contains every one of `texts`. */
export async function waitForText(page: Page, texts: string[], timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await visibleText(page);
    const missing = texts.filter((t) => !text.includes(t));
    if (missing.length === 0) return text;
    if (Date.now() > deadline)
      throw new Error(
        `the page never showed ${JSON.stringify(missing)}; it showed:\n${text.slice(0, 3_000)}`,
      );
    await page.waitForTimeout(250);
  }
}
