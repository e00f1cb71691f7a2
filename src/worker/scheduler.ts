import type { Logger } from 'pino';
import { isUnavailable, type OutageLog } from '../db/availability.js';

// When the worker's tasks run. Each job's file exports its task; this one only schedules them, so a new job touches no scheduling.

/** How a step may pause: cut short by the stop, or by another task's new work. */
export interface Pacing {
  readonly isStopped: boolean;
  sleep(ms: number): Promise<void>;
}

/** One job on a schedule of its own. */
export interface PeriodicTask {
  /** Names the task's loop in the log. */
  readonly name: string;
  /** The pause after a step that found nothing to do; a step that did something is followed by the next at once. */
  readonly intervalMs: number;
  /** Its work is the other tasks' input: after a step that did something, the sleeping ones poll at once. */
  readonly feedsOthers?: boolean;
  /** One step; resolves to how much it did (0: nothing was due). */
  step(pacing: Pacing): Promise<number>;
  /** After the last step: finishes what the steps left in flight. */
  finish?(): Promise<void>;
}

/** Sleeps between polls that new work, or the stop, cuts short. */
class Naps implements Pacing {
  private stopped = false;
  private readonly sleepers = new Set<() => void>();

  get isStopped(): boolean {
    return this.stopped;
  }

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.stopped) return resolve();
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
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

export interface RunningSchedule {
  /** Lets the steps under way end, then each task finishes what it has in flight. */
  stop(): Promise<void>;
}

/**
 * Runs every task in a loop of its own: a step, then the next at once while there is work,
 * else after the task's interval. While the database is unreachable the loops keep trying
 * at that pace, the outage is logged once, and the first step that succeeds afterwards logs
 * that the worker resumed.
 */
export function runOnSchedule(tasks: readonly PeriodicTask[], options: { outage: OutageLog; logger: Logger }): RunningSchedule {
  const naps = new Naps();
  async function loop(task: PeriodicTask): Promise<void> {
    while (!naps.isStopped) {
      let worked = 0;
      const startedAt = Date.now();
      try {
        worked = await task.step(naps);
        options.outage.recovered(startedAt);
      } catch (error) {
        if (isUnavailable(error)) options.outage.failed(error, { loop: task.name });
        else options.logger.error({ err: error, loop: task.name, retryInMs: task.intervalMs }, 'worker step failed; retrying after its interval');
      }
      if (worked > 0 && task.feedsOthers) naps.wakeAll();
      if (worked === 0) await naps.sleep(task.intervalMs);
    }
  }
  const loops = tasks.map(loop);
  return {
    async stop() {
      naps.stop();
      await Promise.all(loops);
      await Promise.all(tasks.map((task) => task.finish?.()));
    },
  };
}

const WITHOUT_PAUSES: Pacing = { isStopped: false, sleep: async () => {} };

/**
 * Runs the tasks' steps one after the other, each task finishing what it started, until
 * none finds anything to do: for tests and one-off runs.
 */
export async function runUntilIdle(tasks: readonly PeriodicTask[]): Promise<void> {
  for (;;) {
    let worked = 0;
    for (const task of tasks) {
      worked += await task.step(WITHOUT_PAUSES);
      await task.finish?.();
    }
    if (worked === 0) return;
  }
}
