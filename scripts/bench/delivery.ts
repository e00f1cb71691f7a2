import { once } from 'node:events';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type pg from 'pg';
import type { CitusCounts } from './citus-counts.js';
import { CliFailed, cpuSecondsOf, nodeFlagsOf, ROOT, RssSampler, runCli, spawnChild, stopChild } from './support.js';

export interface DeliveryResult {
  /** Set when the build has no outbound delivery (no `workflow create` command or worker). */
  skipped?: string;
  events: number;
  workers: number;
  delivered: number;
  duplicates: number;
  lost: number;
  deliveriesPerSecond: number;
  /** From starting the workers to the last delivery received (includes start-up and fan-out). */
  drainSeconds: number;
  workerPeakRssBytes: number;
  /**
   * CPU time (user + system) of all workers per delivery (microseconds), from the first
   * delivery received to the end: start-up and the first fan-out excluded.
   */
  workerCpuMicrosecondsPerDelivery: number;
  /** The same from starting the workers: start-up included. */
  workerCpuMicrosecondsPerDeliveryWithStartup: number;
  /** `--citus`: what a delivery cost the cluster, its event's fan-out included (scripts/bench/citus-counts.ts). */
  citusCounts?: CitusCounts;
}

/**
 * Scenario 7: `events` queued lead.created events, a lead_created workflow to a local
 * receiver, drained by `workers` worker processes. The receiver counts every message id.
 */
export async function runDeliveryScenario(options: {
  pool: pg.Pool;
  databaseUrl: string;
  workspaceId: number;
  events: number;
  workers: number;
  timeoutMs: number;
}): Promise<DeliveryResult> {
  const seen = new Map<string, number>();
  let first = 0;
  let last = 0;
  let workerPids: number[] = [];
  const workerCpuSeconds = () => workerPids.reduce((sum, pid) => sum + (cpuSecondsOf(pid) ?? 0), 0);
  let cpuAtFirstDelivery = 0;
  const receiver = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const id = String(request.headers['webhook-id']);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      last = performance.now();
      if (first === 0) {
        first = last;
        cpuAtFirstDelivery = workerCpuSeconds();
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  receiver.keepAliveTimeout = 30000;
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const { port } = receiver.address() as import('node:net').AddressInfo;

  const env = { DATABASE_URL: options.databaseUrl, LOG_LEVEL: 'warn', WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true', OUTBOX_POLL_MS: '100' };
  const skip = (reason: string): DeliveryResult => {
    receiver.close();
    return {
      skipped: reason,
      events: options.events,
      workers: options.workers,
      delivered: 0,
      duplicates: 0,
      lost: 0,
      deliveriesPerSecond: 0,
      drainSeconds: 0,
      workerPeakRssBytes: 0,
      workerCpuMicrosecondsPerDelivery: 0,
      workerCpuMicrosecondsPerDeliveryWithStartup: 0,
    };
  };
  if (!existsSync(path.join(ROOT, 'dist', 'src', 'worker-main.js'))) return skip('outbound not implemented');
  try {
    await runCli(['workflow', 'create', '--workspace', String(options.workspaceId), '--trigger', 'lead_created', '--url', `http://127.0.0.1:${port}/hook`], env);
  } catch (error) {
    // commander: "error: unknown command 'workflow'" while the outbound feature is missing.
    if (error instanceof CliFailed && /unknown command/i.test(error.stderr)) return skip('outbound not implemented');
    throw error;
  }
  await options.pool.query(
    `
    INSERT INTO outbox (workspace_id, topic, payload)
    SELECT $1, 'lead.created', jsonb_build_object('lead_id', id)
    FROM (SELECT id FROM leads WHERE workspace_id = $1 ORDER BY id LIMIT $2) AS some_leads ORDER BY id
  `,
    [options.workspaceId, options.events],
  );
  const queued = Number(
    (await options.pool.query<{ n: string }>(`SELECT count(*) AS n FROM outbox WHERE workspace_id = $1 AND topic = 'lead.created' AND processed_at IS NULL`, [options.workspaceId]))
      .rows[0]!.n,
  );
  if (queued < options.events) throw new Error(`only ${queued} events could be queued; seed more leads`);

  const started = performance.now();
  const workers = Array.from({ length: options.workers }, () =>
    spawnChild([...(process.env.BENCH_WORKER_NODE_FLAGS?.split(' ').filter(Boolean) ?? nodeFlagsOf('worker')), path.join(ROOT, 'dist', 'src', 'worker-main.js')], env),
  );
  workerPids = workers.map((worker) => worker.pid!).filter(Boolean);
  const rss = new RssSampler(() => workerPids).start();
  const deadline = Date.now() + options.timeoutMs;
  while (seen.size < options.events && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  // A moment more, so a duplicate sent late is still counted.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const workerPeakRssBytes = rss.stop();
  const cpuAtEnd = workerCpuSeconds();
  await Promise.all(workers.map((worker) => stopChild(worker)));
  receiver.closeAllConnections();
  receiver.close();

  const total = [...seen.values()].reduce((sum, count) => sum + count, 0);
  const spanSeconds = Math.max((last - first) / 1000, 0.001);
  return {
    events: options.events,
    workers: options.workers,
    delivered: seen.size,
    duplicates: total - seen.size,
    lost: options.events - seen.size,
    deliveriesPerSecond: seen.size / spanSeconds,
    drainSeconds: (last - started) / 1000,
    workerPeakRssBytes,
    workerCpuMicrosecondsPerDelivery: ((cpuAtEnd - cpuAtFirstDelivery) * 1e6) / Math.max(seen.size - 1, 1),
    workerCpuMicrosecondsPerDeliveryWithStartup: (cpuAtEnd * 1e6) / Math.max(seen.size, 1),
  };
}
