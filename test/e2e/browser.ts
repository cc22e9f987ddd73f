import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium (scripts/install-browser.sh installs it), driven by playwright-core: no
 * browser download at install time, which this project's machines cannot do.
 */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

/** A headless Chromium at `executablePath` (test/services.ts finds it as `svc.browser`); close it when done. */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
}
