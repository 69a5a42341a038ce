// Child of test/unit/local-failures.test.ts, started under `ulimit -n 256`: runs checks through the
// real outbound guard and the lane's executeCheck while this process has no file descriptor left
// (a real EMFILE from the kernel, not a simulated error), and before and after, and prints what
// came back as one JSON line. Every connection goes to 127.0.0.1.
import { openSync, closeSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { pino } from 'pino';
import { createOutboundGuard } from '../../src/net/outbound-guard.ts';
import '../../src/net/guarded-fetch.ts'; // the guard imports it on first use: no file can be opened then
import { collectLocalFailures } from '../../src/net/local-failures.ts';
import type { CheckSpec, ProductRuntime } from '../../src/products/kit/product-contract.ts';
import type { LaneTask } from '../../src/jobs/tasks/lane-task-repo.ts';
import { executeCheck } from '../../workers/lane-runner/execute-check.ts';

const log = pino({ level: 'silent' });
const guard = createOutboundGuard({
  allow: ['127.0.0.0/8'],
  resolver: async () => {
    throw new Error('no names here: literal addresses only');
  },
});
const runtime = { services: { outbound: guard } } as unknown as ProductRuntime;

/** A port check as an active lane writes one: a connection that fails is the port's fact. */
const portCheck: CheckSpec = {
  name: 'test.port',
  lane: 'active',
  timeoutMs: 5000,
  async run(task, ctx) {
    const port = Number(task.params.port);
    let state: string;
    try {
      const socket = await ctx.runtime.services.outbound!.connectTcp(
        { address: '127.0.0.1', port },
        { timeoutMs: 2000 },
      );
      socket.destroy();
      state = 'open';
    } catch {
      state = 'closed';
    }
    return {
      status: 'completed',
      projection: { port, state },
      objects: [],
      relations: [],
      findings: [],
      limitations: [],
      sources: [],
    };
  },
};

const task = (port: number): LaneTask => ({
  id: 1,
  jobId: 1,
  workspaceId: 1,
  objectKey: `127.0.0.1:${port}`,
  check: portCheck.name,
  lane: 'active',
  productLane: 'ports',
  distance: 0,
  params: { port },
  status: 'running',
  attempts: 1,
  jobStatus: 'running',
  target: '127.0.0.1',
});

const run = async (port: number) => {
  const r = await executeCheck(portCheck, task(port), { runtime }, new AbortController().signal, log);
  return r.kind === 'done' ? { kind: r.kind, projection: r.output?.projection } : r;
};

/** Opens /dev/null until the kernel says EMFILE; returns the descriptors to close. */
function exhaust(): number[] {
  const fds: number[] = [];
  for (;;) {
    try {
      fds.push(openSync('/dev/null', 'r'));
    } catch (err) {
      if ((err as { code?: string }).code !== 'EMFILE') throw err;
      return fds;
    }
    if (fds.length > 100_000) throw new Error('no descriptor limit: start this under `ulimit -n`');
  }
}

async function main(): Promise<void> {
  const server = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const open = (server.address() as net.AddressInfo).port;
  const spare = net.createServer();
  await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve));
  const closed = (spare.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => spare.close(() => resolve()));

  const before = { open: await run(open), closed: await run(closed) };
  const fds = exhaust();
  let during: Record<string, unknown>;
  try {
    const fetched = await collectLocalFailures(() => guard.fetch(`http://127.0.0.1:${open}/`, { ports: 'any' }));
    during = {
      descriptorsTaken: fds.length,
      check: await run(open),
      fetch: { ok: fetched.ok, codes: fetched.codes, error: fetched.ok ? null : (fetched.error as Error).name },
    };
  } finally {
    for (const fd of fds) closeSync(fd);
  }
  const after = { open: await run(open) };
  server.close();
  process.stdout.write(`${JSON.stringify({ before, during, after })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
