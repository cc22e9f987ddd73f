import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * Debian's Chromium (scripts/install-browser.sh installs it), driven by playwright-core: no
 * browser download at install time, which this project's machines cannot do.
 */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

/** A headless Chromium at `executablePath` (test/services.ts finds it as `svc.browser`); close it when done. */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
}

/**
 * What a page said while a story ran — its errors, failed requests and 4xx/5xx answers — and
 * what it shows now: appended to a failed wait, so a page that never came up says why.
 */
export function pageDiagnostics(page: Page): () => Promise<string> {
  const said: string[] = [];
  const note = (line: string): void => {
    if (said.length < 50) said.push(`${new Date().toISOString().slice(11, 23)} ${line}`);
  };
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') note(`console.${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => note(`page error: ${e.message}`));
  page.on('requestfailed', (r) => note(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => {
    if (r.status() >= 400) note(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  return async () => {
    const text = await page
      .locator('body')
      .innerText({ timeout: 2_000 })
      .then(
        (t) => t.slice(0, 400),
        (e: unknown) => `(unreadable: ${String(e)})`,
      );
    return [...said, `the page shows: ${JSON.stringify(text)}`].join('\n');
  };
}

/** Runs a wait; when it fails, its error carries what the page said (pageDiagnostics). */
export async function explained<T>(wait: Promise<T>, diagnostics: () => Promise<string>): Promise<T> {
  try {
    return await wait;
  } catch (err) {
    (err as Error).message += `\n--- what the page said ---\n${await diagnostics()}`;
    throw err;
  }
}
