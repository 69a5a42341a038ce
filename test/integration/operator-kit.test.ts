// The operator kit against the real processes: the web role (src/server.ts), the orchestrator and
// a lane worker run as the Procfile runs them, each with its private METRICS_PORT; their /metrics
// are scraped, and every metric and label the Grafana dashboard and the alert rules use must be
// among those really exported (Prometheus' own `up` aside). Every alert has its entry in
// docs/operations.md, and prometheus.yml loads the rules and names the jobs the rules select.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantCredits } from '../../src/credits/ledger.ts';
import { createDb } from '../../src/db/database.ts';
import { createKey, createWorkspace, workspaceInternalId } from '../../src/auth/tenancy-repo.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { startLabRdap, type LabRdap } from '../lab/rdap-server.ts';
import { labZones } from '../lab/zones.ts';
import { domainZones } from '../lab/domain-zones.ts';
import {
  createScratchDatabase,
  freePort,
  ProcessGroup,
  root,
  until,
  type ScratchDatabase,
} from '../helpers/processes.ts';
import { LAB_SPECIAL_USE } from '../lab/addresses.ts';

const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** Series names Prometheus itself adds to every scrape. */
const PROMETHEUS_OWN = new Set(['up']);
/** Labels Prometheus attaches from the scrape config, and the histogram bucket label. */
const TARGET_LABELS = new Set(['job', 'instance', 'role', 'le']);
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'inf',
  'nan',
]);

export interface Scrape {
  /** Metric name → label names seen on its samples (empty for a metric without samples yet). */
  metrics: Map<string, Set<string>>;
}

/** Prometheus text format: names from # TYPE lines (histograms expanded), labels from samples. */
export function parseExposition(text: string, into: Scrape['metrics'] = new Map()): Scrape['metrics'] {
  const add = (name: string) => {
    if (!into.has(name)) into.set(name, new Set());
    return into.get(name)!;
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      const [, name, kind] = type as unknown as [string, string, string];
      add(name);
      if (kind === 'histogram') for (const s of ['_bucket', '_sum', '_count']) add(name + s);
      if (kind === 'summary') for (const s of ['_sum', '_count']) add(name + s);
      continue;
    }
    // Label values may hold braces (stream keys like {lss}:lane:dns), so values are read as strings.
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?\s/.exec(line);
    if (sample) {
      const labels = add(sample[1]!);
      for (const m of (sample[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) labels.add(m[1]!);
    }
  }
  return into;
}

export interface ExprUse {
  metrics: string[];
  /** Label matchers written on a metric: metric → label names. */
  matchers: Array<[string, string[]]>;
  /** Labels named in by()/without()/on()/ignoring() and in legend templates. */
  grouping: string[];
}

/** The metric and label names a PromQL expression uses (enough PromQL for dashboards and rules). */
export function promqlUses(expr: string): ExprUse {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const matchers: Array<[string, string[]]> = [];
  for (const m of noStrings.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}/g)) {
    matchers.push([m[1]!, [...m[2]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((x) => x[1]!)]);
  }
  const grouping: string[] = [];
  let rest = noStrings.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_all, _kw, list: string) => {
      grouping.push(
        ...list
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      );
      return ' ';
    },
  );
  rest = rest
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b\d+(\.\d+)?(e[+-]?\d+)?\b/gi, ' ');
  const metrics: string[] = [];
  for (const m of rest.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2] || KEYWORDS.has(m[1]!.toLowerCase())) continue; // a function or aggregation, or a keyword
    metrics.push(m[1]!);
  }
  return { metrics, matchers, grouping };
}

function dashboardExprs(dash: { panels?: unknown[] }): Array<{ expr: string; legend: string }> {
  const out: Array<{ expr: string; legend: string }> = [];
  const walk = (panels: unknown[] | undefined) => {
    for (const p of panels ?? []) {
      const panel = p as { panels?: unknown[]; targets?: Array<{ expr?: string; legendFormat?: string }> };
      for (const t of panel.targets ?? []) if (t.expr) out.push({ expr: t.expr, legend: t.legendFormat ?? '' });
      walk(panel.panels);
    }
  };
  walk(dash.panels);
  return out;
}

describe('operator kit', () => {
  const group = new ProcessGroup();
  let scratch: ScratchDatabase;
  let dns: LabDns;
  let rdap: LabRdap;
  const scraped: Scrape['metrics'] = new Map();
  const byRole = new Map<string, Set<string>>();
  const texts = new Map<string, string>();

  beforeAll(async () => {
    scratch = await createScratchDatabase('kit');
    dns = await startLabDns({ zones: [...labZones, ...domainZones] });
    rdap = await startLabRdap();
    const [port, webMetrics, orchestratorMetrics, laneMetrics] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const env = {
      DATABASE_URL: scratch.url,
      REDIS_KEY_PREFIX: `${process.env.REDIS_KEY_PREFIX ?? ''}kit:${randomBytes(3).toString('hex')}:`,
      LOG_LEVEL: 'warn',
      SHUTDOWN_TIMEOUT_MS: '2000',
      LANE_POOL_THREADS: '1',
      DNS_SERVERS: dns.address,
      RDAP_BASE_URL: rdap.baseUrl,
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
      ALLOW_SPECIAL_USE_DOMAINS: LAB_SPECIAL_USE,
    };
    group.node('web', ['src/server.ts'], {
      ...env,
      PORT: String(port),
      METRICS_PORT: String(webMetrics),
      WEB_CONCURRENCY: '1',
    });
    group.node('orchestrator', ['workers/orchestrator.ts'], { ...env, METRICS_PORT: String(orchestratorMetrics) });
    group.node('lane-domain', ['workers/lane.ts', 'domain'], { ...env, METRICS_PORT: String(laneMetrics) });
    const base = `http://127.0.0.1:${port}`;
    await until('web /livez', async () => (await fetch(`${base}/livez`)).ok, 30_000);

    // Traffic through every role (an inline lookup, a refusal, a domain job run by the lane
    // worker against the labs), so that labelled series have samples whose labels can be checked.
    const handle = createDb(scratch.url, { connectionLimit: 1 });
    try {
      const ws = await createWorkspace(handle.db, { name: 'kit' });
      await grantCredits(handle.db, await workspaceInternalId(handle.db, ws.workspaceId), 10, 'grant:kit');
      const { key } = await createKey(handle.db, process.env.KEY_PEPPER!, { workspace: ws.workspaceId });
      const post = (route: string, body: unknown, idem: string) =>
        fetch(`${base}${route}`, {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem },
        });
      expect((await post('/v2/lookups/mac', { value: 'F4:F5:E8:12:34:56' }, 'kit-1')).status).toBe(200);
      expect((await fetch(`${base}/v2/products`)).status).toBe(401);
      // The web role sees the lane worker's heartbeat within a few seconds.
      const job = await until(
        'domain lookup accepted',
        async () => {
          const res = await post('/v2/lookups/domain', { value: 'lab.test' }, 'kit-2');
          return res.status === 202 ? ((await res.json()) as { jobRef: string }) : null;
        },
        30_000,
        500,
      );
      await until(
        'domain job terminal',
        async () => {
          const res = await fetch(`${base}/v2/jobs/${job.jobRef}`, { headers: { authorization: `Bearer ${key}` } });
          return ((await res.json()) as { terminal: boolean }).terminal;
        },
        30_000,
        200,
      );
    } finally {
      await handle.close();
    }

    for (const [role, p] of [
      ['web', webMetrics],
      ['orchestrator', orchestratorMetrics],
      ['lane', laneMetrics],
    ] as const) {
      const text = await until(
        `${role} /metrics`,
        async () => {
          const res = await fetch(`http://127.0.0.1:${p}/metrics`);
          return res.ok ? res.text() : null;
        },
        30_000,
      );
      texts.set(role, text);
      byRole.set(role, new Set(parseExposition(text).keys()));
      parseExposition(text, scraped);
    }
  }, 90_000);

  afterAll(async () => {
    await group.killAll();
    await scratch?.drop();
    await Promise.all([dns?.close(), rdap?.close()]);
  });

  it('scrapes what each role should export', () => {
    expect(byRole.get('web')).toContain('http_request_duration_seconds_bucket');
    expect(byRole.get('web')).toContain('lss_credits_reserved_total');
    expect(byRole.get('orchestrator')).toContain('lss_credits_captured_total');
    expect(byRole.get('orchestrator')).toContain('lss_stream_oldest_pending_age_seconds');
    // Monitors (CONTRACT §14): the orchestrator schedules their runs and delivers their webhooks.
    for (const m of [
      'lss_monitor_runs_total',
      'lss_webhook_deliveries_total',
      'lss_webhook_delivery_lag_seconds_bucket',
    ])
      expect(byRole.get('orchestrator')).toContain(m);
    // Change detection (CONTRACT §13): the orchestrator compares a job with its baseline as it ends.
    for (const m of ['lss_change_comparison_seconds_bucket', 'lss_change_comparison_objects_bucket'])
      expect(byRole.get('orchestrator')).toContain(m);
    expect(byRole.get('lane')).toContain('lss_task_duration_seconds_count');
    // The lane's main thread alone (the web lane's benchmark reads it per lookup).
    expect(byRole.get('lane')).toContain('lss_main_thread_cpu_seconds_total');
    expect(scraped.get('http_request_duration_seconds_count')).toEqual(new Set(['method', 'route', 'status_code']));
    expect(scraped.get('lss_task_duration_seconds_count')).toEqual(new Set(['lane', 'outcome']));
    // The credit metrics count the job that ran: 2 credits reserved by the web role, captured by
    // the lane's tasks and read from the ledger by the orchestrator, none left open.
    expect(texts.get('web')).toMatch(/^lss_credits_reserved_total\{product="lookup.domain.v1"\} 2$/m);
    expect(texts.get('orchestrator')).toMatch(/^lss_credits_captured_total 2$/m);
    expect(texts.get('orchestrator')).toMatch(/^lss_credits_reserved_open 0$/m);
    expect(scraped.get('lss_stream_oldest_pending_age_seconds')).toEqual(new Set(['stream', 'group']));
  });

  it('every lss_ metric a role exports is documented in docs/operations.md', () => {
    const ops = read('docs/operations.md');
    const families = new Set(
      [...texts.values()].flatMap((t) => [...t.matchAll(/^# TYPE (lss_\w+) /gm)].map((m) => m[1]!)),
    );
    expect(families).toContain('lss_change_comparison_seconds');
    expect([...families].filter((f) => !new RegExp(`\\b${f}\\b`).test(ops))).toEqual([]);
  });

  const dashboard = JSON.parse(read('ops/grafana-dashboard.json')) as { panels: unknown[] };
  const alerts = parseYaml(read('ops/alerts.yml')) as {
    groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
  };
  const rules = alerts.groups.flatMap((g) => g.rules);
  const queries = [
    ...dashboardExprs(dashboard).map((q) => ({ where: 'dashboard', ...q })),
    ...rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr, legend: '' })),
  ];

  it('every metric the dashboard and the alert rules use is really exported', () => {
    expect(queries.length).toBeGreaterThan(20);
    const unknown: string[] = [];
    for (const q of queries) {
      const use = promqlUses(q.expr);
      expect(use.metrics.length, `${q.where}: ${q.expr}`).toBeGreaterThan(0);
      for (const m of use.metrics) if (!scraped.has(m) && !PROMETHEUS_OWN.has(m)) unknown.push(`${q.where}: ${m}`);
    }
    expect(unknown).toEqual([]);
  });

  it('every label they match, group by or show in a legend exists', () => {
    const allLabels = new Set([...TARGET_LABELS, ...[...scraped.values()].flatMap((s) => [...s])]);
    const wrong: string[] = [];
    for (const q of queries) {
      const use = promqlUses(q.expr);
      for (const [metric, labels] of use.matchers) {
        const known = scraped.get(metric);
        // A metric without samples yet shows no labels: its names are checked by the union below.
        for (const l of labels)
          if (!TARGET_LABELS.has(l) && !(known?.size ? known.has(l) : allLabels.has(l)))
            wrong.push(`${q.where}: ${metric}{${l}}`);
      }
      const legend = [...q.legend.matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]!);
      for (const l of [...use.grouping, ...legend]) if (!allLabels.has(l)) wrong.push(`${q.where}: label ${l}`);
    }
    expect(wrong).toEqual([]);
  });

  it('the dashboard covers requests, latency, errors, admission, queues, lanes, credits and monitors', () => {
    const used = new Set(dashboardExprs(dashboard).flatMap((q) => promqlUses(q.expr).metrics));
    for (const m of [
      'http_request_duration_seconds_count',
      'http_request_duration_seconds_bucket',
      'lss_admission_outcomes_total',
      'lss_stream_length',
      'lss_stream_oldest_pending_age_seconds',
      'lss_task_duration_seconds_count',
      'lss_lane_outcomes_total',
      'lss_credits_reserved_total',
      'lss_credits_captured_total',
      'lss_monitor_runs_total',
      'lss_webhook_deliveries_total',
      'lss_webhook_delivery_lag_seconds_bucket',
    ])
      expect(used, m).toContain(m);
  });

  it('prometheus.yml loads the rules and scrapes the jobs they select; every alert is explained in docs/operations.md', () => {
    const prom = parseYaml(read('ops/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string }>;
    };
    expect(prom.rule_files).toEqual(['alerts.yml']);
    const jobs = prom.scrape_configs.map((s) => s.job_name);
    expect(jobs).toEqual(expect.arrayContaining(['lss-web', 'lss-orchestrator', 'lss-lane']));
    const ops = read('docs/operations.md');
    for (const r of rules) expect(ops, r.alert).toMatch(new RegExp(`\\| \`${r.alert}\` \\|`));
  });

  it('the PromQL reader finds metrics and labels, and misses none of a typo', () => {
    const u = promqlUses(
      'sum by (lane, le) (rate(lss_task_duration_seconds_bucket{outcome=~"failed|x"}[5m])) / clamp_min(sum(rate(lss_stream_lenght[5m])), 1e-9) > 0.2',
    );
    expect(u.metrics).toEqual(['lss_task_duration_seconds_bucket', 'lss_stream_lenght']);
    expect(u.grouping).toEqual(['lane', 'le']);
    expect(u.matchers).toEqual([['lss_task_duration_seconds_bucket', ['outcome']]]);
    expect(scraped.has('lss_stream_lenght')).toBe(false);
  });
});
