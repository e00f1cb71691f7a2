import { isUnavailable, OutageLog } from '../db/availability.js';
import { leaseMs, newWorkerId } from '../deliveries/deliver.js';
import { releaseDeliveryClaims } from '../deliveries/repository.js';
import { releaseClaims as releaseEventClaims } from '../outbox/repository.js';
import { readBacklog } from './backlog.js';
import { DeliveryJob } from './delivery-job.js';
import { fanOutLeadEvents } from './fan-out.js';
import { housekeeping } from './housekeeping.js';
import { runWebsiteAnalyses } from './website-analysis.js';
import type { WorkerDeps } from './worker-deps.js';

// When the worker's jobs run. Each job is its own module; this one only schedules them.

export interface RunningWorker {
  /** Stops claiming, finishes in-flight deliveries and analyses, releases claims, and resolves. */
  stop(): Promise<void>;
}

const FAN_OUT_BATCH = 500;
const ANALYSIS_CONCURRENCY = 4;
const HOUSEKEEPING_EVERY_MS = 10 * 60 * 1000;

/** The jobs of one worker id, as the schedules below call them. */
function jobsOf(deps: WorkerDeps, workerId: string, outage?: OutageLog) {
  const lease = leaseMs(deps.config);
  const metrics = deps.metrics.worker;
  return {
    deliveries: new DeliveryJob(deps, workerId, lease, outage),
    fanOut: () => fanOutLeadEvents(deps.db, { limit: FAN_OUT_BATCH, maxAttempts: deps.config.WEBHOOK_MAX_ATTEMPTS, metrics }),
    analyses: () => runWebsiteAnalyses(deps.db, deps.config, workerId, { limit: ANALYSIS_CONCURRENCY, leaseMs: lease, metrics }),
    releaseClaims: () => Promise.all([releaseDeliveryClaims(deps.db, workerId), releaseEventClaims(deps.db, workerId)]),
  };
}

/**
 * Drains everything due now (events, analyses, deliveries, including retries that are due)
 * until nothing is left: for tests and one-off runs.
 */
export async function processAll(deps: WorkerDeps): Promise<void> {
  const jobs = jobsOf(deps, newWorkerId());
  for (;;) {
    let progress = 0;
    while ((await jobs.fanOut()) > 0) progress += 1;
    progress += await jobs.analyses();
    progress += await jobs.deliveries.claimAndStart();
    await jobs.deliveries.allFinished();
    if (progress === 0) return;
  }
}

/** Sleeps between polls that new work, or the stop, cuts short. */
class Naps {
  private stopped = false;
  private readonly sleepers = new Set<() => void>();

  get isStopped(): boolean {
    return this.stopped;
  }

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.stopped) return resolve();
      const wake = () => { clearTimeout(timer); this.sleepers.delete(wake); resolve(); };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  wakeAll(): void {
    for (const wake of [...this.sleepers]) wake();
  }

  stop(): void {
    this.stopped = true;
    this.wakeAll();
  }
}

/**
 * The dispatcher: three loops sharing one worker id (fan-out of outbox events with
 * housekeeping now and then, website analyses, deliveries), each polling every
 * OUTBOX_POLL_MS when idle and going again at once while there is work. While the database
 * is unreachable the loops keep polling at that pace, the outage is logged once, and the
 * first step that succeeds afterwards logs that the worker resumed. The process's metrics
 * report the backlog (outbox, due deliveries) read through the worker's pool.
 */
export function startWorker(deps: WorkerDeps): RunningWorker {
  const workerId = newWorkerId();
  const log = deps.logger.child({ worker: workerId });
  // An outage is logged by the pool; anything else leaving the backlog gauges out is a fault to see.
  deps.metrics.watchBacklog(() => readBacklog(deps.db).catch((error: unknown) => {
    if (!isUnavailable(error)) log.warn({ err: error }, 'could not read the backlog for the metrics; its gauges are left out of this scrape');
    throw error;
  }));
  const outage = new OutageLog(log, {
    down: 'worker paused: the database is unreachable; retrying every poll interval (logged once per outage)',
    up: 'worker resumed: the database is reachable again',
  });
  const jobs = jobsOf(deps, workerId, outage);
  const naps = new Naps();

  async function loop(name: string, step: () => Promise<number>): Promise<void> {
    while (!naps.isStopped) {
      let worked = 0;
      const startedAt = Date.now();
      try {
        worked = await step();
        outage.recovered(startedAt);
      } catch (error) {
        if (isUnavailable(error)) outage.failed(error, { loop: name });
        else log.error({ err: error, loop: name }, 'worker step failed; retrying after the poll interval');
      }
      if (worked === 0) await naps.sleep(deps.config.OUTBOX_POLL_MS);
    }
  }

  let lastHousekeeping = 0;
  const loops = [
    loop('fan-out', async () => {
      const events = await jobs.fanOut();
      if (events > 0) naps.wakeAll();
      if (Date.now() - lastHousekeeping > HOUSEKEEPING_EVERY_MS) {
        lastHousekeeping = Date.now();
        await housekeeping(deps.db, deps.config.DELIVERY_RETENTION_DAYS);
      }
      return events;
    }),
    loop('analysis', jobs.analyses),
    // Every completed step has asked the database, so a step that returns proves it reachable.
    loop('delivery', async () => {
      await jobs.deliveries.room();
      if (naps.isStopped) return 0;
      const claimed = await jobs.deliveries.claimAndStart();
      if (claimed === 0 && jobs.deliveries.inFlightCount > 0) {
        await Promise.race([jobs.deliveries.oneFinished(), naps.sleep(deps.config.OUTBOX_POLL_MS)]);
        return 1;
      }
      return claimed;
    }),
  ];

  return {
    async stop() {
      naps.stop();
      await Promise.all(loops);
      await jobs.deliveries.allFinished();
      await jobs.releaseClaims()
        .catch((error: unknown) => log.error({ err: error }, 'could not release claims; they expire with their lease'));
    },
  };
}
