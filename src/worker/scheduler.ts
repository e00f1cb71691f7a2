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
  /**
   * The tasks (by name) whose input its work is: after a step that did something, those asleep
   * poll at once. Only those: a task woken for nothing spends its statements for nothing, and
   * housekeeping, whose purges scan whole tables, keeps to its own schedule.
   */
  readonly feeds?: readonly string[];
  /** One step; resolves to how much it did (0: nothing was due). */
  step(pacing: Pacing): Promise<number>;
  /** After the last step: finishes what the steps left in flight. */
  finish?(): Promise<void>;
}

/** Sleeps between polls that new work for the sleeping task, or the stop, cuts short. */
class Naps {
  private stopped = false;
  /** Each sleeper's wake-up, with the task it belongs to. */
  private readonly sleepers = new Map<() => void, string>();
  /**
   * Tasks woken while awake, since their current step began: the step may have looked before the
   * new work was there, so their next sleep ends at once instead of the wake being lost.
   */
  private readonly wokenAwake = new Set<string>();

  get isStopped(): boolean {
    return this.stopped;
  }

  /** The pacing of one task's steps: its sleeps end early for its own new work or the stop. */
  of(task: string): Pacing {
    return new TaskPacing(this, task);
  }

  sleep(ms: number, task: string): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.stopped || this.wokenAwake.delete(task)) return resolve();
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.set(wake, task);
    });
  }

  /** A step of the task begins: it looks after every wake so far, so none is left to keep. */
  stepping(task: string): void {
    this.wokenAwake.delete(task);
  }

  wake(tasks: readonly string[]): void {
    for (const task of tasks) this.wokenAwake.add(task);
    for (const [wake, task] of [...this.sleepers]) {
      if (!tasks.includes(task)) continue;
      this.wokenAwake.delete(task);
      wake();
    }
  }

  stop(): void {
    this.stopped = true;
    for (const wake of [...this.sleepers.keys()]) wake();
  }
}

class TaskPacing implements Pacing {
  constructor(
    private readonly naps: Naps,
    private readonly task: string,
  ) {}

  get isStopped(): boolean {
    return this.naps.isStopped;
  }

  sleep(ms: number): Promise<void> {
    return this.naps.sleep(ms, this.task);
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
  const names = new Set(tasks.map((task) => task.name));
  for (const task of tasks) {
    const unknown = task.feeds?.filter((name) => !names.has(name)) ?? [];
    if (unknown.length > 0) throw new Error(`task ${task.name} feeds ${unknown.join(', ')}: no such task`);
  }
  const naps = new Naps();
  async function loop(task: PeriodicTask): Promise<void> {
    const pacing = naps.of(task.name);
    while (!naps.isStopped) {
      let worked = 0;
      const startedAt = Date.now();
      try {
        naps.stepping(task.name);
        worked = await task.step(pacing);
        options.outage.recovered(startedAt);
      } catch (error) {
        if (isUnavailable(error)) options.outage.failed(error, { loop: task.name });
        else options.logger.error({ err: error, loop: task.name, retryInMs: task.intervalMs }, 'worker step failed; retrying after its interval');
      }
      if (worked > 0 && task.feeds) naps.wake(task.feeds);
      if (worked === 0) await pacing.sleep(task.intervalMs);
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
