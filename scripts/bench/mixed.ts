// The mixed-traffic scenarios (issue 54): the kinds of request a busy workspace sends, all at
// once over the same connections, against the service as `npm start` runs it (API and
// in-process worker), without webhooks and with a workflow sending each new lead to a
// connector. Beside them, each kind alone on the same service (the parts), and, with webhooks,
// how the worker keeps up: the lag from a lead's commit to its delivery's first attempt, the
// backlog sampled every second, the drain after the load, RSS, PostgreSQL connections, what is
// left behind, and a lone request's latency before and after.
import { once } from 'node:events';
import http from 'node:http';
import path from 'node:path';
import type pg from 'pg';
import { sessionName } from '../../src/db/session-name.js';
import { DbAccounting } from './db-accounting.js';
import type { Workload } from './load.js';
import type { FixedRateResult, ScenarioResult } from './report.js';
import {
  benchServiceEnv,
  cpuSecondsOf,
  freePort,
  nodeFlagsOf,
  ROOT,
  rssOf,
  runCli,
  runLoadMeasuringCpu,
  runOpenLoop,
  spawnChild,
  stopChild,
  waitForHttp,
  waitForIdleDatabase,
} from './support.js';

/** The mix, by share of requests (issue 54). */
export const MIX = { new: 0.4, existing: 0.2, batch10: 0.1, read: 0.2, me: 0.1 } as const;
type Kind = keyof typeof MIX;

/** The connections the mixed service may hold: the API's pool, its LISTEN connection, the in-process worker's pool of 4. */
export const SERVICE_CONNECTION_BOUND = 10 + 1 + 4;

/** The bench's own connections name themselves so. */
export const BENCH_APPLICATION_NAME = 'lead-intake-bench';

export interface BacklogSample {
  /** Seconds since the load started. */
  t: number;
  /** Lead events not yet fanned out. */
  events: number;
  /** Pending deliveries due now (not yet attempted, or a retry that is due). */
  due: number;
  /** The mixed service's PostgreSQL connections (its sessions' names carry its pid: other processes on the database are not counted). */
  connections: number;
  /** The same by pool (the part of sessionName before the pid): `api`, `worker`, `api-key-listen`. */
  connectionsByPool: Record<string, number>;
  rssMb: number;
}

export interface MixedRun extends ScenarioResult {
  samples: BacklogSample[];
  /** Outbox events still unprocessed, and deliveries not final, once the backlog drained (or the wait ran out). */
  leftBehind: { events: number; deliveries: number };
  /** Least-squares slope of the backlog (events + due deliveries) over the load, per second. */
  backlogSlopePerSecond: number;
  maxBacklog: number;
  maxConnections: number;
  /** The pools' connections in the first sample with maxConnections. */
  maxConnectionsByPool: Record<string, number>;
  /** A lone POST /leads (new person, 20 req/s) just before the load and once the backlog drained. */
  loneBefore: FixedRateResult;
  loneAfter: FixedRateResult;
}

export interface WebhookRun extends MixedRun {
  deliveriesMade: number;
  /** Seconds from a lead's row (its transaction's time) to its delivery's first attempt recorded. */
  lag: { p50: number; p99: number; max: number; count: number };
  /** The backlog when the load stopped, and how long it took to drain (first sample at zero). */
  drain: { backlogAtStop: number; seconds: number; attempts: number; perSecond: number; timedOut: boolean };
  /**
   * Right after the load and its drain, `events` lead.created events queued at once by SQL (as the delivery
   * scenario queues its own): deliveries/s from their first attempt to their last, what the worker does once
   * the load has stopped, whatever backlog the load left.
   */
  burst: { events: number; deliveriesPerSecond: number; firstAttempts: number; timedOut: boolean };
  receiver: { answered: number; refused503: number; duplicates: number };
}

export interface MixedResult {
  parts: Record<Kind, ScenarioResult>;
  /** The weighted harmonic mean of the parts' req/s: what the mix would reach if its kinds cost each other nothing. */
  partsHarmonicMean: number;
  /** Null when not asked for (`--only mixed-webhooks`). */
  mixed: MixedRun | null;
  /** Null when not asked for (`--only mixed`). */
  webhooks: WebhookRun | null;
  /** RSS of the mixed service: the peak over every run, and its growth after the first minute of the mixed load. */
  rss: { peakMb: number; atOneMinuteMb: number; growthAfterFirstMinuteMb: number };
  /** The delivery scenario's rate in the same run (two worker processes), for the drain's ratio. */
  deliveryScenarioPerSecond: number | null;
}

export interface MixedOptions {
  pool: pg.Pool;
  databaseUrl: string;
  redisUrl: string;
  workspaceId: number;
  token: string;
  /** The seeded leads of the workspace: read at random, and the first `existing` of them sent again. */
  seeded: { firstId: number; lastId: number };
  existing: number;
  runId: string;
  connections: number;
  warmupSeconds: number;
  /** Each part alone. */
  partSeconds: number;
  /** Each mixed run. */
  mixedSeconds: number;
  drainTimeoutSeconds: number;
  burstEvents: number;
  profileFlags: string[];
  deliveryScenarioPerSecond: number | null;
  runs: { plain: boolean; webhooks: boolean };
  /** `--db-accounting`: the database's work over each mixed run (load and drain) and the burst, in the log. */
  accounting: DbAccounting | null;
  log: (message: string) => void;
}

const mb = (bytes: number) => bytes / 1024 / 1024;

function workloads(options: MixedOptions, tag: string): Record<Kind, Workload> {
  return {
    new: { kind: 'new-lead', runId: `${options.runId}${tag}n`, phoneBase: 9_000_000_000 },
    existing: { kind: 'existing-lead', seeded: options.existing },
    batch10: { kind: 'new-batch', runId: `${options.runId}${tag}b`, phoneBase: 9_500_000_000, size: 10 },
    read: { kind: 'get-random-lead', ids: { from: options.seeded.firstId, to: options.seeded.lastId } },
    me: { kind: 'get', path: '/api/v1/me' },
  };
}

const PART_NAMES: Record<Kind, string> = {
  new: 'M1 alone: POST /leads new person',
  existing: 'M2 alone: POST /leads existing person',
  batch10: 'M3 alone: POST /leads/batch 10 new',
  read: 'M4 alone: GET /leads/{id}',
  me: 'M5 alone: GET /me',
};

/** Weighted harmonic mean: the rate of a mix whose every request costs what it costs alone. */
export function harmonicMean(parts: Record<Kind, ScenarioResult>): number {
  const seconds = (Object.keys(MIX) as Kind[]).reduce((sum, kind) => sum + MIX[kind] / Math.max(parts[kind].requestsPerSecond, 1e-9), 0);
  return 1 / seconds;
}

/** The receiver of the webhook scenario: 200, or 503 for one request in 20 (the worker retries it). */
async function startReceiver() {
  const delivered = new Map<string, number>();
  let refused503 = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (Math.random() < 0.05) {
        refused503++;
        response.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"busy"}');
        return;
      }
      const id = String(request.headers['webhook-id']);
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as import('node:net').AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    counts: () => ({
      answered: delivered.size,
      refused503,
      duplicates: [...delivered.values()].reduce((sum, count) => sum + count - 1, 0),
    }),
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

// The lead events the fan-out turns into deliveries. Website analyses (company.analyze) are left out: the bench's
// company domains (.example) have no website, so each analysis waits for its DNS lookup to fail.
const LEAD_TOPICS = `topic IN ('lead.created', 'lead.tag_added', 'lead.erased')`;

// What the sampler reads every second: index reads of the two partial indexes the worker claims through, and the
// sessions of the service's process by name ($1: sessionName with '%' for the pool's name, and the process's pid).
const BACKLOG = `
  SELECT (SELECT count(*) FROM outbox WHERE processed_at IS NULL AND ${LEAD_TOPICS})::int AS events,
    (SELECT count(*) FROM deliveries WHERE branch = 'pending' AND next_attempt_at <= now())::int AS due,
    (SELECT coalesce(jsonb_object_agg(application_name, n), '{}') FROM (
       SELECT application_name, count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND backend_type = 'client backend' AND application_name LIKE $1
       GROUP BY 1) AS sessions) AS sessions
`;

class Sampler {
  readonly samples: BacklogSample[] = [];
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  private readonly started = performance.now();
  constructor(
    private readonly pool: pg.Pool,
    private readonly pid: number,
  ) {}
  start(intervalMs: number): this {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), intervalMs);
    return this;
  }
  async sample(): Promise<BacklogSample | null> {
    if (this.busy) return null;
    this.busy = true;
    try {
      const t = (performance.now() - this.started) / 1000;
      const pattern = sessionName('%', this.pid);
      const { rows } = await this.pool.query<{ events: number; due: number; sessions: Record<string, number> }>(BACKLOG, [pattern]);
      const { sessions, ...backlog } = rows[0]!;
      const [prefix, suffix] = pattern.split('%') as [string, string];
      const connectionsByPool = Object.fromEntries(Object.entries(sessions).map(([name, n]) => [name.slice(prefix.length, name.length - suffix.length), n]));
      const connections = Object.values(sessions).reduce((sum, n) => sum + n, 0);
      const sample = { t: Number(t.toFixed(2)), ...backlog, connections, connectionsByPool, rssMb: Number(mb(rssOf(this.pid) ?? 0).toFixed(1)) };
      this.samples.push(sample);
      return sample;
    } finally {
      this.busy = false;
    }
  }
  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

/** Least-squares slope of y over t. */
function slope(points: Array<{ t: number; y: number }>): number {
  if (points.length < 2) return 0;
  const meanT = points.reduce((sum, p) => sum + p.t, 0) / points.length;
  const meanY = points.reduce((sum, p) => sum + p.y, 0) / points.length;
  const num = points.reduce((sum, p) => sum + (p.t - meanT) * (p.y - meanY), 0);
  const den = points.reduce((sum, p) => sum + (p.t - meanT) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

export async function runMixedScenarios(options: MixedOptions): Promise<MixedResult> {
  const { pool, log } = options;
  // Events the WORKER=off service left, and workflows of earlier scenarios (their receivers are gone), are set aside:
  // the mixed service's worker serves exactly the mixed scenarios' events.
  await pool.query('UPDATE outbox SET processed_at = now() WHERE processed_at IS NULL');
  await pool.query('UPDATE workflows SET active = false WHERE workspace_id = $1 AND active', [options.workspaceId]);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // As `npm start` runs it: API and worker in one process, the worker's settings left at their defaults, but a
  // 503's retry after about a second (not 30), so that every delivery ends before the bench does.
  const service = spawnChild([...nodeFlagsOf('start'), ...options.profileFlags, path.join(ROOT, 'dist', 'src', 'main.js')], {
    ...benchServiceEnv(options.databaseUrl, options.redisUrl, port),
    WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_BASE_MS: '1000',
  });
  const pid = service.pid!;
  const receiver = await startReceiver();
  const rssSamples: Array<{ at: number; bytes: number }> = [];
  const rssTimer = setInterval(() => rssSamples.push({ at: performance.now(), bytes: rssOf(pid) ?? 0 }), 250);
  try {
    await waitForHttp(`${base}/api/v1/me`);
    const run = (name: string, workload: Workload, seconds: number, warmupSeconds: number) =>
      runLoadMeasuringCpu({ url: base, token: options.token, connections: options.connections, warmupSeconds, durationSeconds: seconds, workload }, pid).then(
        ({ result, cpuMicrosecondsPerAnswer }) => ({ name, ...result, serverPeakRssBytes: 0, serverCpuMicrosecondsPerAnswer: cpuMicrosecondsPerAnswer }) as ScenarioResult,
      );
    const lone = async (name: string, tag: string): Promise<FixedRateResult> => {
      const result = await runOpenLoop({
        url: base,
        token: options.token,
        rate: 20,
        warmupSeconds: 0,
        durationSeconds: 3,
        workload: { kind: 'new-lead', runId: `${options.runId}${tag}`, phoneBase: 9_900_000_000 },
      });
      return { name, ...result, serverPeakRssBytes: 0 };
    };

    // The parts: each kind alone, on the same service, after the same warm-up.
    const partWorkloads = workloads(options, 'p');
    const parts = {} as Record<Kind, ScenarioResult>;
    for (const kind of Object.keys(MIX) as Kind[]) {
      log(`${PART_NAMES[kind]}: ${options.warmupSeconds}s warm-up + ${options.partSeconds}s`);
      parts[kind] = await run(PART_NAMES[kind], partWorkloads[kind], options.partSeconds, options.warmupSeconds);
      await waitForIdleDatabase(pool);
    }
    const partsHarmonicMean = harmonicMean(parts);

    const mixedOnce = async (name: string, tag: string) => {
      const loneBefore = await lone(`${name}: lone POST /leads before`, `${tag}lb`);
      const accounted = await accountFrom(`${name} (load and drain)`);
      const parts = workloads(options, tag);
      const workload: Workload = { kind: 'mixed', parts: (Object.keys(MIX) as Kind[]).map((kind) => ({ weight: MIX[kind], workload: parts[kind] })) };
      log(`${name}: ${options.mixedSeconds}s at ${options.connections} connections`);
      const sampler = new Sampler(pool, pid).start(1000);
      const loadStarted = performance.now();
      firstLoadAt ??= loadStarted;
      const result = await run(name, workload, options.mixedSeconds, 0);
      const loadSeconds = (performance.now() - loadStarted) / 1000;
      sampler.stop();
      return { loneBefore, result, sampler, loadSeconds, loadStarted, accounted };
    };

    /** The database's work and the service's CPU from now until the returned function is called (--db-accounting). */
    const accountFrom = async (name: string) => {
      const accounting = options.accounting;
      if (!accounting) return async () => {};
      const before = { db: await accounting.snapshot(), cpu: cpuSecondsOf(pid) ?? 0 };
      return async () => {
        const after = { db: await accounting.snapshot(), cpu: cpuSecondsOf(pid) ?? 0 };
        const deliveries = (after.db.tables.get('deliveries')?.ins ?? 0) - (before.db.tables.get('deliveries')?.ins ?? 0);
        const leads = (after.db.tables.get('leads')?.ins ?? 0) - (before.db.tables.get('leads')?.ins ?? 0);
        const [unit, units] = deliveries > 0 ? ['delivery', deliveries] : ['new lead', leads];
        log(`service CPU, ${name}: ${(((after.cpu - before.cpu) * 1e6) / Math.max(units, 1)).toFixed(0)} us per ${unit} (${leads} new leads, ${deliveries} deliveries)`);
        for (const line of DbAccounting.lines(name, before.db, after.db, units, unit)) log(line);
      };
    };

    let firstLoadAt: number | undefined;
    const mixed = options.runs.plain ? await plainRun() : null;
    const webhooks = options.runs.webhooks ? await webhookRun() : null;

    clearInterval(rssTimer);
    const peak = Math.max(...rssSamples.map((sample) => sample.bytes));
    const oneMinute = (firstLoadAt ?? 0) + 60_000;
    const atOneMinute = rssSamples.find((sample) => sample.at >= oneMinute)?.bytes ?? rssSamples.at(-1)!.bytes;
    const afterFirstMinute = Math.max(0, ...rssSamples.filter((sample) => sample.at >= oneMinute).map((sample) => sample.bytes));
    return {
      parts,
      partsHarmonicMean,
      mixed: mixed && { ...mixed, serverPeakRssBytes: peak },
      webhooks: webhooks && { ...webhooks, serverPeakRssBytes: peak },
      rss: { peakMb: round(mb(peak), 0), atOneMinuteMb: round(mb(atOneMinute), 0), growthAfterFirstMinuteMb: round(mb(Math.max(0, afterFirstMinute - atOneMinute)), 1) },
      deliveryScenarioPerSecond: options.deliveryScenarioPerSecond,
    };

    // Without webhooks: the worker only marks each lead analyzed and its event processed.
    async function plainRun(): Promise<MixedRun> {
      const plain = await mixedOnce('M mixed, no webhooks', 'm');
      const plainDrain = await drainUntil(plain.sampler, options.drainTimeoutSeconds, (sample) => sample.events === 0);
      await plain.accounted();
      const plainLeft = await leftBehind(pool, null);
      const plainLoneAfter = await lone('M mixed, no webhooks: lone POST /leads after', 'mla');
      if (plainDrain.timedOut) log('M mixed, no webhooks: the outbox did not drain in time');
      return {
        ...plain.result,
        ...backlogFigures(plain.sampler.samples, plain.loadSeconds),
        leftBehind: plainLeft,
        loneBefore: plain.loneBefore,
        loneAfter: plainLoneAfter,
      };
    }

    async function webhookRun(): Promise<WebhookRun> {
      // With a webhook per new lead: a connector to the receiver, and a lead_created workflow sending to it.
      const env = { DATABASE_URL: options.databaseUrl, LOG_LEVEL: 'warn', WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' };
      const connector = (await runCli(['connector', 'create', '--workspace', String(options.workspaceId), '--url', receiver.url], env)) as { id: number };
      const workflow = (await runCli(
        ['workflow', 'create', '--workspace', String(options.workspaceId), '--trigger', 'lead_created', '--connector', String(connector.id)],
        env,
      )) as {
        id: number;
      };
      const hooked = await mixedOnce('MW mixed, a webhook per new lead', 'w');
      const stoppedAt = (await pool.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
      const atStop = hooked.sampler.samples.at(-1);
      const drainStarted = performance.now();
      const drain = await drainUntil(hooked.sampler, options.drainTimeoutSeconds, (sample) => sample.events === 0 && sample.due === 0);
      const drainSeconds = (performance.now() - drainStarted) / 1000;
      const { attempts } = (
        await pool.query<{ attempts: number }>(
          `SELECT count(*)::int AS attempts FROM delivery_attempts AS a JOIN deliveries AS d ON d.workspace_id = a.workspace_id AND d.id = a.delivery_id
         WHERE d.workflow_id = $1 AND a.created_at >= $2`,
          [workflow.id, stoppedAt],
        )
      ).rows[0]!;
      // Retries not yet due are not a backlog, but must end too: wait (bounded) for every delivery to be final.
      await waitFor(options.drainTimeoutSeconds, async () => (await leftBehind(pool, workflow.id)).deliveries === 0);
      await hooked.accounted();
      const hookedLeft = await leftBehind(pool, workflow.id);
      const hookedLoneAfter = await lone('MW mixed, a webhook per new lead: lone POST /leads after', 'wla');
      await waitFor(30, async () => (await leftBehind(pool, workflow.id)).deliveries === 0);
      const lag = (
        await pool.query<{ p50: number; p99: number; max: number; count: number }>(
          `SELECT count(*)::int AS count,
          coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a.created_at - l.created_at)), 0)::float8 AS p50,
          coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM a.created_at - l.created_at)), 0)::float8 AS p99,
          coalesce(max(extract(epoch FROM a.created_at - l.created_at)), 0)::float8 AS max
         FROM deliveries AS d
         JOIN leads AS l ON l.workspace_id = d.workspace_id AND l.id = d.lead_id
         JOIN delivery_attempts AS a ON a.workspace_id = d.workspace_id AND a.delivery_id = d.id AND a.attempt = 1 AND a.series = 1
         WHERE d.workflow_id = $1 AND l.created_at < $2`,
          [workflow.id, stoppedAt],
        )
      ).rows[0]!;
      const { made } = (await pool.query<{ made: number }>('SELECT count(*)::int AS made FROM deliveries WHERE workflow_id = $1', [workflow.id])).rows[0]!;
      const backlogAtStop = atStop ? atStop.events + atStop.due : 0;
      const burst = await burstAfterLoad(workflow.id);
      return {
        ...hooked.result,
        ...backlogFigures(hooked.sampler.samples, hooked.loadSeconds),
        leftBehind: hookedLeft,
        loneBefore: hooked.loneBefore,
        loneAfter: hookedLoneAfter,
        deliveriesMade: made,
        lag: { p50: round(lag.p50, 3), p99: round(lag.p99, 3), max: round(lag.max, 3), count: lag.count },
        drain: {
          backlogAtStop,
          seconds: round(drainSeconds, 2),
          attempts,
          perSecond: round(drain.timedOut ? 0 : backlogAtStop / Math.max(drainSeconds, 0.25), 0),
          timedOut: drain.timedOut,
        },
        burst,
        receiver: receiver.counts(),
      };
    }

    async function burstAfterLoad(workflowId: number) {
      log(`MW after the load: ${options.burstEvents} lead.created events at once`);
      const accounted = await accountFrom('MW after the load: the burst');
      const { rows } = await pool.query<{ first: string; last: string }>(
        `WITH queued AS (
           INSERT INTO outbox (workspace_id, topic, payload)
           SELECT $1, 'lead.created', jsonb_build_object('lead_id', id) FROM (SELECT id FROM leads WHERE workspace_id = $1 ORDER BY id LIMIT $2) AS some_leads ORDER BY id
           RETURNING id
         ) SELECT min(id) AS first, max(id) AS last FROM queued`,
        [options.workspaceId, options.burstEvents],
      );
      const range = [workflowId, rows[0]!.first, rows[0]!.last];
      const firstAttempts = `
        SELECT count(*)::int AS n, coalesce(extract(epoch FROM max(a.created_at) - min(a.created_at)), 0)::float8 AS span
        FROM deliveries AS d JOIN delivery_attempts AS a ON a.workspace_id = d.workspace_id AND a.delivery_id = d.id AND a.attempt = 1 AND a.series = 1
        WHERE d.workflow_id = $1 AND d.outbox_id BETWEEN $2 AND $3`;
      const deadline = performance.now() + options.drainTimeoutSeconds * 1000;
      let result = { n: 0, span: 0 };
      while (performance.now() < deadline) {
        result = (await pool.query<{ n: number; span: number }>(firstAttempts, range)).rows[0]!;
        if (result.n >= options.burstEvents) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      await waitFor(options.drainTimeoutSeconds, async () => (await leftBehind(pool, workflowId)).deliveries === 0);
      await accounted();
      return {
        events: options.burstEvents,
        deliveriesPerSecond: round(result.n / Math.max(result.span, 0.001), 0),
        firstAttempts: result.n,
        timedOut: result.n < options.burstEvents,
      };
    }
  } finally {
    clearInterval(rssTimer);
    receiver.close();
    await stopChild(service);
  }
}

const round = (value: number, digits: number) => Number(value.toFixed(digits));

function backlogFigures(samples: BacklogSample[], loadSeconds: number) {
  const during = samples.filter((sample) => sample.t <= loadSeconds + 0.5);
  const backlog = during.map((sample) => ({ t: sample.t, y: sample.events + sample.due }));
  const maxConnections = Math.max(0, ...samples.map((sample) => sample.connections));
  return {
    samples,
    // The first tenth of the load fills the pipeline: the slope is taken over the rest.
    backlogSlopePerSecond: round(slope(backlog.filter((point) => point.t >= loadSeconds / 10)), 2),
    maxBacklog: Math.max(0, ...backlog.map((point) => point.y)),
    maxConnections,
    maxConnectionsByPool: samples.find((sample) => sample.connections === maxConnections)?.connectionsByPool ?? {},
  };
}

/** Samples every 250 ms until `done` holds (or the time runs out). */
async function drainUntil(sampler: Sampler, timeoutSeconds: number, done: (sample: BacklogSample) => boolean): Promise<{ timedOut: boolean }> {
  const deadline = performance.now() + timeoutSeconds * 1000;
  for (;;) {
    const sample = await sampler.sample();
    if (sample && done(sample)) return { timedOut: false };
    if (performance.now() > deadline) return { timedOut: true };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function waitFor(timeoutSeconds: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutSeconds * 1000;
  while (!(await done()) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
}

/** Lead events never processed, and the workflow's deliveries not final (pending, whenever due). */
async function leftBehind(pool: pg.Pool, workflowId: number | null): Promise<{ events: number; deliveries: number }> {
  const { rows } = await pool.query<{ events: number; deliveries: number }>(
    `SELECT (SELECT count(*) FROM outbox WHERE processed_at IS NULL AND ${LEAD_TOPICS})::int AS events,
       (SELECT count(*) FROM deliveries WHERE branch = 'pending' AND workflow_id = $1)::int AS deliveries`,
    [workflowId ?? 0],
  );
  return rows[0]!;
}
