import { afterAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { pino } from 'pino';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createDb, createPool } from '../../src/db/connect.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { PROJECT_ROOT } from '../../src/paths.js';
import { readBacklog } from '../../src/worker/backlog.js';
import { readTestEnvironment } from '../support/env.js';
import { parseMetrics } from '../support/metrics.js';
import { startSilentServer, unreachableDatabaseUrl } from '../support/served-app.js';

// The metrics of one process without a process around them: the documentation's table, the
// pool gauges under load, and the backlog gauges while the database is away.

const silent = pino({ level: 'silent' });
const pools: pg.Pool[] = [];
const pool = (url: string, max: number) => {
  const created = createPool(url, max, { logger: silent, name: 'test', connectTimeoutMs: 5000 });
  pools.push(created);
  return created;
};
afterAll(async () => {
  await Promise.all(pools.map((created) => created.end().catch(() => {})));
});

/** The rows of docs/operations.md's metric table: name, type and labels as documented. */
function documentedMetrics(): Map<string, { type: string; labels: string[] }> {
  const text = readFileSync(path.join(PROJECT_ROOT, 'docs', 'operations.md'), 'utf8');
  const section = text.slice(text.indexOf('\n## Metrics\n'), text.indexOf('\n### Alerts to page on\n'));
  const rows = section.split('\n').filter((line) => line.startsWith('| `lead_intake_'));
  return new Map(
    rows.map((row) => {
      const [name, type, labels] = row
        .split('|')
        .slice(1, 4)
        .map((cell) => cell.trim());
      return [name!.replaceAll('`', ''), { type: type!, labels: [...labels!.matchAll(/`(\w+)`/g)].map((match) => match[1]!).sort() }];
    }),
  );
}

describe('metrics', () => {
  it('are each documented in docs/operations.md with their type and labels, and nothing else is', async () => {
    const { registry } = createMetrics({ processMetrics: true });
    const exposed = await registry.getMetricsAsJSON();
    const labelsOf = (name: string) => [...(registry.getSingleMetric(name) as unknown as { labelNames: string[] }).labelNames].sort();
    const registered = new Map(
      exposed.filter((metric) => metric.name.startsWith('lead_intake_')).map((metric) => [metric.name, { type: String(metric.type), labels: labelsOf(metric.name) }]),
    );
    expect(Object.fromEntries(documentedMetrics())).toEqual(Object.fromEntries(registered));
    // The alerts and the dashboard queries name only metrics that exist (a histogram by its series).
    const text = readFileSync(path.join(PROJECT_ROOT, 'docs', 'operations.md'), 'utf8');
    const named = new Set([...text.slice(text.indexOf('\n### Alerts to page on\n')).matchAll(/lead_intake_\w+/g)].map(([name]) => name.replace(/_(count|bucket|sum)$/, '')));
    expect([...named].filter((name) => !registered.has(name))).toEqual([]);
    // The default process metrics are there too, under their usual names.
    const names = exposed.map((metric) => metric.name);
    expect(names).toEqual(expect.arrayContaining(['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']));
  });

  it('have their own port: METRICS_PORT must differ from PORT', () => {
    expect(() => loadConfig({ PORT: '3000', METRICS_PORT: '3000' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: '3000', METRICS_PORT: '3000' })).toThrow(/METRICS_PORT: must differ from PORT/);
    expect(loadConfig({ PORT: '3000', METRICS_PORT: '9464' }).METRICS_PORT).toBe(9464);
    expect(loadConfig({}).METRICS_PORT).toBeUndefined();
  });

  it('report a pool whose every connection is busy, with a query waiting for one', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const busy = pool(readTestEnvironment().adminUrl, 1);
    metrics.watchPool('api', busy);
    const held = await busy.connect();
    const waiting = busy.query('SELECT 1');
    const during = parseMetrics(await metrics.registry.metrics());
    expect(during.value('lead_intake_db_pool_connections_in_use', { pool: 'api' })).toBe(1);
    expect(during.value('lead_intake_db_pool_waiting_requests', { pool: 'api' })).toBe(1);
    expect(during.value('lead_intake_db_pool_max_connections', { pool: 'api' })).toBe(1);
    held.release();
    await waiting;
    const after = parseMetrics(await metrics.registry.metrics());
    expect(after.value('lead_intake_db_pool_waiting_requests', { pool: 'api' })).toBe(0);
    expect(after.value('lead_intake_db_pool_connections_in_use', { pool: 'api' })).toBe(0);
  });

  it('leave the backlog gauges out, and still answer, while the database is unreachable or hangs', async () => {
    const silentServer = await startSilentServer();
    try {
      for (const url of [await unreachableDatabaseUrl(), await unreachableDatabaseUrl(silentServer.port)]) {
        const metrics = createMetrics({ processMetrics: false });
        metrics.watchBacklog(() => readBacklog(createDb(pool(url, 1))));
        metrics.http.operation('getMe')(200, 0.01);
        const started = Date.now();
        const samples = parseMetrics(await metrics.registry.metrics());
        expect(Date.now() - started).toBeLessThan(4000);
        expect(samples.all('lead_intake_outbox_pending_events')).toEqual([]);
        expect(samples.all('lead_intake_deliveries_due')).toEqual([]);
        expect(samples.value('lead_intake_http_request_duration_seconds_count', { operation: 'getMe', status: '200' })).toBe(1);
      }
    } finally {
      await silentServer.close();
    }
  }, 20_000);
});
