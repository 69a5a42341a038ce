// Headless Chromium for browser tests: Debian's `chromium` package driven by playwright-core
// (never a browser download of Playwright's own: these machines reach only the package
// registries). When /usr/bin/chromium is missing it is installed with apt-get (debian-package.ts).
import { chromium, type Browser } from 'playwright-core';
import { ensureDebianPackage } from './debian-package.ts';

export const CHROMIUM = '/usr/bin/chromium';

export function ensureChromium(
  log: (msg: string) => void = (m) => process.stderr.write(`[chromium] ${m}\n`),
): Promise<string> {
  return ensureDebianPackage(CHROMIUM, 'chromium', log);
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: await ensureChromium(),
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
