import pTimeout from 'p-timeout';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type LabelValues } from 'prom-client';
import type pg from 'pg';

// What this process counts for Prometheus (`GET /metrics` on METRICS_PORT, src/metrics/server.ts).
// One registry per process, built by the composition root and handed to whoever counts.
// docs/operations.md, "Metrics", describes every metric; a test keeps the two in step.

/** Where the outbox and the deliveries stand, read when Prometheus scrapes (src/worker/backlog.ts). */
export interface Backlog {
  outbox: ReadonlyArray<{ topic: string; pending: number; oldestAgeSeconds: number }>;
  deliveries: ReadonlyArray<{ sender: string; due: number; oldestDueSeconds: number }>;
}

/** The public API's requests, counted by the HTTP edge. */
export interface HttpMetrics {
  /** Records the finished requests of one operation of the OpenAPI document (bound once per route). */
  operation(operationId: string): (status: number, seconds: number) => void;
  rateLimited(): void;
  concurrencyLimited(): void;
  /** Reports the requests the per-key concurrency limit counts in progress, read on every scrape. */
  watchRequestsInProgress(read: () => number): void;
}

/** What the two intake operations did with each row; `outcome` as in docs/operations.md. */
export type IntakeOutcome = 'created' | 'updated' | 'skipped' | 'duplicate' | 'failed';
export interface IntakeMetrics {
  rows(operationId: string, outcome: IntakeOutcome, count?: number): void;
  replayed(operationId: string): void;
  /** A group of concurrent write requests ran in one transaction (see src/leads/intake/write-groups.ts). */
  groupRan(requests: number): void;
}

/** The worker's deliveries and website analyses. */
export interface WorkerMetrics {
  /** A delivery reached its final branch (an attempt's, or Failed at once for a configuration error). */
  deliveryFinished(sender: string, branch: 'Delivered' | 'Failed'): void;
  /** An attempt's HTTP exchange took this long. */
  attemptTimed(seconds: number): void;
  /** An attempt failed in a retryable way and another one is scheduled. */
  retryScheduled(): void;
  /** A 429 postponed a delivery without counting as an attempt. */
  rateLimitWaited(): void;
  /** Due deliveries of a capped (or 429-paused) endpoint found no slot and were rescheduled. */
  deliveriesDeferred(count: number): void;
  /** The worker disabled an endpoint whose attempts all failed for long enough. */
  endpointDisabled(kind: 'connector' | 'workflow'): void;
  analysisFinished(result: 'analyzed' | 'failed'): void;
}

export interface Metrics {
  registry: Registry;
  http: HttpMetrics;
  intake: IntakeMetrics;
  worker: WorkerMetrics;
  /** Reports a pool's connections in use, waiting requests and size under `pool="name"`. */
  watchPool(name: string, pool: pg.Pool): void;
  /** Reads the backlog on every scrape; a read that fails or takes over 2 s leaves its gauges out of that scrape. */
  watchBacklog(read: () => Promise<Backlog>): void;
}

const PREFIX = 'lead_intake_';
const BACKLOG_READ_LIMIT_MS = 2000;
/** Both backlog gauges come from one read per scrape. */
const BACKLOG_READ_REUSE_MS = 1000;

/**
 * `processMetrics`: also prom-client's default process metrics (CPU, memory, event loop lag,
 * GC), whose event loop monitor wakes the process every 10 ms: only where they are served.
 */
export function createMetrics(options: { processMetrics: boolean }): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  const counter = <Label extends string = never>(name: string, help: string, labelNames: readonly Label[] = []) =>
    new Counter<Label>({ name: `${PREFIX}${name}`, help, labelNames, registers });

  const requestDuration = new Histogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'Public API requests by operationId and status code, from routing to the last byte of the answer.',
    labelNames: ['operation', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  // Per operation, one child per status code, made on first use: a request costs a map lookup and an observe.
  const timeOperation = (operationId: string) => {
    const byStatus = new Map<number, Histogram.Internal<'operation' | 'status'>>();
    return (status: number, seconds: number) => {
      let child = byStatus.get(status);
      if (!child) {
        child = requestDuration.labels(operationId, String(status));
        byStatus.set(status, child);
      }
      child.observe(seconds);
    };
  };
  const rateLimited = counter('http_rate_limited_requests_total', 'Requests refused with 429 by the per-key rate limit.');
  const concurrencyLimited = counter(
    'http_concurrency_limited_requests_total',
    'Requests refused with 429 because their API key had CONCURRENT_REQUESTS_PER_KEY requests in progress in this process.',
  );

  const inProgressReaders: Array<() => number> = [];
  new Gauge({
    name: `${PREFIX}http_requests_in_progress`,
    help: 'Public API requests of authenticated keys this process works on now (what CONCURRENT_REQUESTS_PER_KEY bounds per key); 0 at rest.',
    registers,
    collect() {
      this.set(inProgressReaders.reduce((sum, read) => sum + read(), 0));
    },
  });

  const intakeRows = counter('intake_rows_total', 'Lead rows written by POST /leads and POST /leads/batch (dry runs and replays excluded), by outcome.', ['operation', 'outcome']);
  const replays = counter('idempotent_replays_total', 'Write requests answered with the stored answer of an earlier one with the same Idempotency-Key.', ['operation']);
  const groupSize = new Histogram({
    name: `${PREFIX}write_group_requests`,
    help: 'Write requests per group run in one transaction (concurrent POST /leads calls share one; a batch or dry run is a group of one).',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers,
  });

  const deliveries = counter('deliveries_total', 'Deliveries that reached a final branch, by branch (Delivered, Failed) and sender.', ['branch', 'sender']);
  const attemptDuration = new Histogram({
    name: `${PREFIX}delivery_attempt_duration_seconds`,
    help: 'The HTTP exchange of each delivery attempt made by the worker.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const retries = counter('delivery_retries_scheduled_total', 'Delivery attempts that failed in a retryable way and scheduled another attempt.');
  const rateLimitWaits = counter('delivery_rate_limit_waits_total', "Answers 429 that paused their endpoint for the Retry-After (each also one of its delivery's attempts).");
  const deferrals = counter('delivery_deferrals_total', 'Due deliveries of a capped or 429-paused endpoint that found no free slot and were rescheduled instead of claimed.');
  const disabledEndpoints = counter(
    'endpoints_disabled_total',
    'Endpoints this process disabled because every attempt to them failed for ENDPOINT_DISABLE_AFTER_DAYS, by kind (connector, workflow).',
    ['kind'],
  );
  const analyses = counter('website_analyses_total', 'Company website analyses finished, by result (analyzed, failed).', ['result']);

  const pools = new Map<string, pg.Pool>();
  const poolGauge = (name: string, help: string, value: (pool: pg.Pool) => number) =>
    new Gauge({
      name: `${PREFIX}${name}`,
      help,
      labelNames: ['pool'] as const,
      registers,
      collect() {
        for (const [pool, watched] of pools) this.set({ pool }, value(watched));
      },
    });
  poolGauge('db_pool_connections_in_use', 'PostgreSQL connections of the pool checked out by a query or transaction.', (pool) => pool.totalCount - pool.idleCount);
  poolGauge('db_pool_waiting_requests', 'Queries and transactions waiting for a connection of the pool.', (pool) => pool.waitingCount);
  poolGauge('db_pool_max_connections', 'The most connections the pool opens (DATABASE_POOL_SIZE, or the worker pool of npm start).', (pool) => pool.options.max ?? 10);

  let readBacklog: (() => Promise<Backlog>) | null = null;
  let lastRead: { at: number; backlog: Promise<Backlog | null> } | null = null;
  const backlogOfThisScrape = (): Promise<Backlog | null> => {
    if (!readBacklog) return Promise.resolve(null);
    if (!lastRead || Date.now() - lastRead.at > BACKLOG_READ_REUSE_MS) {
      lastRead = { at: Date.now(), backlog: pTimeout(readBacklog(), { milliseconds: BACKLOG_READ_LIMIT_MS, message: 'backlog read timed out' }).catch(() => null) };
    }
    return lastRead.backlog;
  };
  const backlogGauge = <Label extends string>(
    name: string,
    help: string,
    labelNames: readonly Label[],
    fill: (set: (labels: LabelValues<Label>, value: number) => void, backlog: Backlog) => void,
  ) =>
    new Gauge({
      name: `${PREFIX}${name}`,
      help,
      labelNames,
      registers,
      async collect() {
        const backlog = await backlogOfThisScrape();
        // Unknown (the database is away): no sample rather than a stale one or a failed scrape.
        this.reset();
        if (backlog) fill((labels, value) => this.set(labels, value), backlog);
      },
    });
  backlogGauge('outbox_pending_events', 'Outbox events not processed yet, by topic.', ['topic'], (set, backlog) => {
    for (const row of backlog.outbox) set({ topic: row.topic }, row.pending);
  });
  backlogGauge('outbox_oldest_pending_age_seconds', 'Age of the oldest outbox event not processed yet, by topic (0 when none).', ['topic'], (set, backlog) => {
    for (const row of backlog.outbox) set({ topic: row.topic }, row.oldestAgeSeconds);
  });
  // Labelled even where one series would do: prom-client reports 0 for a reset gauge without labels, where "unknown" must leave the series out.
  backlogGauge('deliveries_due', 'Pending deliveries whose next attempt is due now, by sender.', ['sender'], (set, backlog) => {
    for (const row of backlog.deliveries) set({ sender: row.sender }, row.due);
  });
  backlogGauge('deliveries_oldest_due_seconds', 'How long the longest-waiting due delivery has been due, by sender (0 when none).', ['sender'], (set, backlog) => {
    for (const row of backlog.deliveries) set({ sender: row.sender }, row.oldestDueSeconds);
  });

  return {
    registry,
    http: {
      operation: timeOperation,
      rateLimited: () => rateLimited.inc(),
      concurrencyLimited: () => concurrencyLimited.inc(),
      watchRequestsInProgress: (read) => {
        inProgressReaders.push(read);
      },
    },
    intake: {
      rows: (operationId, outcome, count = 1) => {
        if (count > 0) intakeRows.inc({ operation: operationId, outcome }, count);
      },
      replayed: (operationId) => replays.inc({ operation: operationId }),
      groupRan: (requests) => groupSize.observe(requests),
    },
    worker: {
      deliveryFinished: (sender, branch) => deliveries.inc({ branch, sender }),
      attemptTimed: (seconds) => attemptDuration.observe(seconds),
      retryScheduled: () => retries.inc(),
      rateLimitWaited: () => rateLimitWaits.inc(),
      deliveriesDeferred: (count) => {
        if (count > 0) deferrals.inc(count);
      },
      endpointDisabled: (kind) => disabledEndpoints.inc({ kind }),
      analysisFinished: (result) => analyses.inc({ result }),
    },
    watchPool: (name, pool) => {
      pools.set(name, pool);
    },
    watchBacklog: (read) => {
      readBacklog = read;
      lastRead = null;
    },
  };
}
