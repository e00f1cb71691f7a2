import { expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { OutageLog } from '../../src/db/availability.js';
import { runOnSchedule, type PeriodicTask } from '../../src/worker/scheduler.js';

// The worker's schedule: a task's new work wakes the tasks it feeds, and no other. Under a stream
// of new leads the fan-out does something every step; housekeeping (ten minutes apart) must not
// run after each of them.

const logger = pino({ level: 'silent' });
const outage = () => new OutageLog(logger, { down: 'down', up: 'up' });
const LONG = 60_000;

function counting(name: string, work: (step: number) => Promise<number>, feeds?: string[]): PeriodicTask & { steps: number } {
  const task: PeriodicTask & { steps: number } = {
    name,
    intervalMs: LONG,
    feeds,
    steps: 0,
    async step(): Promise<number> {
      task.steps += 1;
      return work(task.steps);
    },
  };
  return task;
}

it('wakes the tasks a step fed, and leaves the others asleep until their interval', async () => {
  // Five steps that each did something, a pause between them for the others to fall asleep.
  const feeder = counting('fan-out', async (step) => (step <= 5 ? (await sleep(20), 1) : 0), ['delivery']);
  const fed = counting('delivery', async () => 0);
  const other = counting('housekeeping', async () => 0);
  const schedule = runOnSchedule([feeder, fed, other], { outage: outage(), logger });
  await sleep(400);
  await schedule.stop();
  expect(feeder.steps).toBe(6);
  expect(fed.steps).toBeGreaterThanOrEqual(5);
  expect(other.steps).toBe(1);
});

it('keeps a wake that comes while the fed task is in the middle of a step: its next sleep ends at once', async () => {
  // The fed task's first step is still under way when the feeder's step ends and wakes it.
  const feeder = counting('fan-out', async (step) => (step === 1 ? (await sleep(20), 1) : 0), ['delivery']);
  const fed = counting('delivery', async (step) => (step === 1 ? (await sleep(100), 0) : 0));
  const schedule = runOnSchedule([feeder, fed], { outage: outage(), logger });
  await sleep(300);
  await schedule.stop();
  // Its first step found nothing, but the feeder wrote meanwhile: one more step, not a sleep of the whole interval.
  expect(fed.steps).toBe(2);
});

it('refuses a task that feeds a task it does not run', () => {
  const feeder = counting('fan-out', async () => 0, ['deliveries']);
  expect(() => runOnSchedule([feeder, counting('delivery', async () => 0)], { outage: outage(), logger })).toThrow('task fan-out feeds deliveries: no such task');
});
