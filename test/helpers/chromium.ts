// Headless Chromium for browser tests: Debian's `chromium` package driven by playwright-core
// (never a browser download of Playwright's own: these machines reach only the package
// registries). When /usr/bin/chromium is missing it is installed with apt-get, the way
// ops/services.ts installs MariaDB and Redis: directly as root, else through `sudo -n`.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

function sh(argv: string[], timeoutMs: number): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(
      argv[0]!,
      argv.slice(1),
      { timeout: timeoutMs, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ ok: !err, output: `${stdout}${stderr}` }),
    );
  });
}

export async function ensureChromium(
  log: (msg: string) => void = (m) => process.stderr.write(`[chromium] ${m}\n`),
): Promise<string> {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  log(`${CHROMIUM} missing; installing the Debian package with apt-get (a minute or two)`);
  let res = await sh([...sudo, 'apt-get', 'install', '-y', '--no-install-recommends', 'chromium'], 600_000);
  if (!res.ok) {
    // A fresh machine has no package lists yet.
    await sh([...sudo, 'apt-get', 'update'], 300_000);
    res = await sh([...sudo, 'apt-get', 'install', '-y', '--no-install-recommends', 'chromium'], 600_000);
  }
  if (!res.ok || !existsSync(CHROMIUM))
    throw new Error(`could not install chromium with apt-get:\n${res.output.slice(-3000)}`);
  return CHROMIUM;
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
