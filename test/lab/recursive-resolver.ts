// A real recursive resolver in front of the lab (issue 48 item 5): Debian's Unbound, installed on
// demand (test/helpers/debian-package.ts), listening on 127.0.0.1 and forwarding every question to
// the lab's DNS server (its own cache, retries, timeouts and server selection in between). A deployment resolves through such a resolver, and a zone
// that rate-limits limits the resolver, which then answers SERVFAIL or late: what the service's
// congestion windows must read as a slow zone, not a dead one.
//
// Only loopback: Unbound listens on 127.0.0.1 and asks the lab's address; it has no root hints
// and no trust anchor (the iterator module only), so it never asks anything else.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import dgram from 'node:dgram';
import dnsPacket from 'dns-packet';
import { ensureDebianPackage } from '../helpers/debian-package.ts';
import { freePort, until, type ProcessGroup, type Proc } from '../helpers/processes.ts';

export const UNBOUND = '/usr/sbin/unbound';

export interface RecursiveResolver {
  /** host:port, as the lab's env writes DNS_SERVERS. */
  address: string;
  proc: Proc;
  stop(): Promise<void>;
}

/** `upstream`: the lab DNS server's host:port. */
export async function startUnbound(
  group: ProcessGroup,
  upstream: string,
  log: (msg: string) => void,
): Promise<RecursiveResolver> {
  const bin = await ensureDebianPackage(UNBOUND, 'unbound', log);
  const [upHost, upPort] = upstream.replace(/^\[|\]/g, '').split(/:(?=\d+$)/) as [string, string];
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lss-unbound-'));
  const conf = path.join(dir, 'unbound.conf');
  writeFileSync(
    conf,
    [
      'server:',
      '  username: ""',
      '  chroot: ""',
      `  directory: "${dir}"`,
      `  pidfile: "${path.join(dir, 'unbound.pid')}"`,
      '  use-syslog: no',
      `  verbosity: ${process.env.LSS_UNBOUND_VERBOSITY ?? 0}`,
      '  interface: 127.0.0.1',
      `  port: ${port}`,
      '  do-ip6: no',
      '  access-control: 127.0.0.0/8 allow',
      // The lab is on loopback; a resolver refuses to ask there by default.
      '  do-not-query-localhost: no',
      // No DNSSEC (no trust anchor: the lab's zones are unsigned), no minimised names.
      '  module-config: "iterator"',
      '  qname-minimisation: no',
      '  harden-referral-path: no',
      // The lab's zones live under special-use names that Unbound would answer itself.
      '  local-zone: "test." nodefault',
      '  local-zone: "invalid." nodefault',
      '  domain-insecure: "test."',
      // One thread with room for a scan's questions at once (the default 1024 jostles them).
      '  num-threads: 1',
      '  num-queries-per-thread: 4096',
      '  outgoing-range: 8192',
      '  msg-cache-size: 64m',
      '  rrset-cache-size: 128m',
      '',
      // Every name to the lab's server. A stub zone for the root would make Unbound prime it
      // (". NS"), which the lab, authoritative for its own zones only, refuses; forwarding asks it
      // exactly the questions the scan asks, through Unbound's cache, retries and timeouts.
      'forward-zone:',
      '  name: "."',
      `  forward-addr: ${upHost}@${upPort}`,
      '',
    ].join('\n'),
  );
  const proc = group.spawn('unbound', bin, ['-d', '-c', conf]);
  const address = `127.0.0.1:${port}`;
  await until('unbound to answer', async () => (await answers(port)) || !proc.running(), 15_000);
  if (!proc.running()) throw new Error(`unbound exited at start:\n${proc.output().slice(-3000)}`);
  log(`unbound ${address} in front of the lab DNS ${upstream}`);
  return {
    address,
    proc,
    async stop() {
      await proc.stop('SIGTERM', 3000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether a resolver on 127.0.0.1:port answers a question at all (any rcode). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = dgram.createSocket('udp4');
    const done = (v: boolean) => {
      clearTimeout(timer);
      sock.close();
      resolve(v);
    };
    const timer = setTimeout(() => done(false), 500);
    sock.once('message', () => done(true));
    sock.once('error', () => done(false));
    sock.send(
      dnsPacket.encode({
        type: 'query',
        id: 1,
        flags: dnsPacket.RECURSION_DESIRED,
        questions: [{ type: 'SOA', name: 'test' }],
      }),
      port,
      '127.0.0.1',
    );
  });
}
