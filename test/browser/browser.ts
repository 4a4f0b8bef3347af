// Headless Chromium for the console's tests: Debian's `chromium` package (browser downloads do not
// work on these machines), driven by playwright-core. CHROMIUM_PATH overrides where it is.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: install it (apt-get install -y chromium, as .ci/run does) or set CHROMIUM_PATH`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** Where `npm run docs:console` keeps the screenshots (CONSOLE_SCREENSHOTS set); none otherwise. */
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS;

export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
