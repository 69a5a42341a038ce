// A Debian package installed on demand, the way ops/services.ts installs MariaDB and Redis:
// directly as root, else through `sudo -n` (these machines reach Debian's packages and npm only).
// Used for tools the tests and benchmarks run beside the service (Chromium, Unbound).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';

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

/** `binary` (an absolute path), installing Debian's `pkg` with apt-get when it is missing. */
export async function ensureDebianPackage(binary: string, pkg: string, log: (msg: string) => void): Promise<string> {
  if (existsSync(binary)) return binary;
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  log(`${binary} missing; installing the Debian package ${pkg} with apt-get (a minute or two)`);
  let res = await sh([...sudo, 'apt-get', 'install', '-y', '--no-install-recommends', pkg], 600_000);
  if (!res.ok) {
    // A fresh machine has no package lists yet.
    await sh([...sudo, 'apt-get', 'update'], 300_000);
    res = await sh([...sudo, 'apt-get', 'install', '-y', '--no-install-recommends', pkg], 600_000);
  }
  if (!res.ok || !existsSync(binary))
    throw new Error(`could not install ${pkg} with apt-get:\n${res.output.slice(-3000)}`);
  return binary;
}
