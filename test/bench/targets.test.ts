import { describe, expect, it } from '@jest/globals';
import type { MixedResult } from '../../scripts/bench/mixed.js';
import type { BenchRun, FixedRateResult, ScenarioResult } from '../../scripts/bench/report.js';
import { mixedTargetsOf, targetsOf } from '../../scripts/bench/report.js';

// The bench's verdicts: a target passes on its figure only when every run it was measured on
// answered as it should. A refused key answers fast, so a scenario of 401s once printed PASS.

const scenario = (name: string, requestsPerSecond: number, faults: Partial<ScenarioResult> = {}): ScenarioResult => ({
  name,
  requestsPerSecond,
  p50: 5,
  p99: 10,
  requests: requestsPerSecond * 10,
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  statusCounts: { '200': requestsPerSecond * 10 },
  answersIncludingWarmup: requestsPerSecond * 10,
  serverPeakRssBytes: 100 * 1024 * 1024,
  serverCpuMicrosecondsPerAnswer: 100,
  leadsPerSecond: name === 'batch' ? 20_000 : undefined,
  ...faults,
});

const fixedRate = (name: string): FixedRateResult => ({
  name,
  rate: 20,
  requests: 200,
  answeredPerSecond: 20,
  p50: 4,
  p99: 8,
  p999: 9,
  max: 10,
  non2xx: 0,
  errors: 0,
  errorReasons: {},
  maxSendLagMs: 1,
  serverPeakRssBytes: 100 * 1024 * 1024,
});

function mixedResult(faults: { mixed?: Partial<ScenarioResult>; part?: Partial<ScenarioResult> } = {}): MixedResult {
  const parts = { new: 1000, existing: 900, batch10: 180, read: 2300, me: 3800 };
  const run = (name: string, requestsPerSecond: number, fault: Partial<ScenarioResult> = {}) => ({
    ...scenario(name, requestsPerSecond, fault),
    samples: [{ t: 1, events: 0, due: 0, connections: 14, connectionsByPool: { api: 9, 'api-key-listen': 1, worker: 4 }, rssMb: 150 }],
    leftBehind: { events: 0, deliveries: 0 },
    backlogSlopePerSecond: 0,
    maxBacklog: 0,
    maxConnections: 14,
    maxConnectionsByPool: { api: 9, 'api-key-listen': 1, worker: 4 },
    loneBefore: fixedRate('lone before'),
    loneAfter: fixedRate('lone after'),
  });
  return {
    parts: Object.fromEntries(Object.entries(parts).map(([kind, rate]) => [kind, scenario(kind, rate, kind === 'new' ? faults.part : {})])) as MixedResult['parts'],
    partsHarmonicMean: 775,
    mixed: run('mixed', 700, faults.mixed),
    webhooks: {
      ...run('mixed webhooks', 700, faults.mixed),
      deliveriesMade: 1000,
      lag: { p50: 0.1, p99: 1, max: 2, count: 1000 },
      drain: { backlogAtStop: 0, seconds: 0.25, attempts: 0, perSecond: 0, timedOut: false },
      burst: { events: 5000, deliveriesPerSecond: 1500, firstAttempts: 5000, timedOut: false },
      receiver: { answered: 1000, refused503: 50, duplicates: 0 },
    },
    rss: { peakMb: 150, atOneMinuteMb: 150, growthAfterFirstMinuteMb: 1 },
    deliveryScenarioPerSecond: 2000,
  };
}

function benchRun(faulty: Partial<Record<keyof BenchRun['named'], Partial<ScenarioResult>>> = {}): BenchRun {
  const names = ['constant', 'insert', 'readBaseline', 'sameWork', 'me', 'read', 'created', 'updated', 'manyCreated', 'manyUpdated', 'batch', 'large'] as const;
  const named = Object.fromEntries(names.map((name) => [name, scenario(name, 1000, faulty[name])])) as BenchRun['named'];
  const valid = scenario('valid', 1000);
  return {
    connections: 32,
    scenarios: Object.values(named),
    named,
    fixedRate: [fixedRate('3 POST /leads new person')],
    lowRate: fixedRate('3 POST /leads new person, 20 req/s'),
    referenceLowRateP50: 5,
    delivery: {
      events: 100,
      workers: 2,
      delivered: 100,
      duplicates: 0,
      lost: 0,
      deliveriesPerSecond: 2000,
      drainSeconds: 1,
      workerPeakRssBytes: 1,
      workerCpuMicrosecondsPerDelivery: 1,
      workerCpuMicrosecondsPerDeliveryWithStartup: 1,
    },
    flood: {
      flood: { ...scenario('flood', 5000), non2xx: 50_000 },
      transactions: 0,
      transactionsPerAnswer: 0,
      serviceCpuMicrosecondsPerAnswer: 1,
      databaseCpuMicrosecondsPerAnswer: null,
      validAlone: valid,
      validWithFlood: valid,
      floodDuringValid: { ...scenario('flood', 5000), non2xx: 50_000 },
      floodRate: 1000,
      non401: 0,
      serverPeakRssBytes: 1,
    },
    serverPeakRssBytes: 100 * 1024 * 1024,
    ceilings: { insert: { statementsPerSecond: 1, statements: 1 }, leadWrite: { statementsPerSecond: 1, statements: 1 } },
    mixed: mixedResult(),
  };
}

describe('bench targets', () => {
  it('pass on their figures when every run answered 2xx', () => {
    const targets = targetsOf(benchRun());
    expect(targets.new_lead_100_workspaces_vs_insert_baseline!.pass).toBe(true);
    expect(targets.existing_lead_100_workspaces_vs_insert_baseline!.pass).toBe(true);
    expect(targets.valid_me_beside_flood_vs_alone!.pass).toBe(true);
  });

  it.each([
    ['non-2xx answers (a refused key)', { non2xx: 5000 }],
    ['errors', { errors: 3 }],
    ['timeouts', { timeouts: 1 }],
    ['no request at all', { requests: 0 }],
  ])('fail, whatever the figure, when a scenario they were measured on had %s', (_, fault) => {
    const targets = targetsOf(benchRun({ manyCreated: { ...fault, requestsPerSecond: 1390 } }));
    const target = targets.new_lead_100_workspaces_vs_insert_baseline!;
    expect(target.value).toBeGreaterThan(1);
    expect(target.pass).toBe(false);
    expect(target.target).toContain('FAILED');
    expect(targets.existing_lead_100_workspaces_vs_insert_baseline!.pass).toBe(true);
  });

  it('fail every ratio over a broken baseline', () => {
    const targets = targetsOf(benchRun({ insert: { errors: 1 } }));
    for (const name of ['new_lead_vs_insert_baseline', 'existing_lead_vs_insert_baseline', 'new_lead_100_workspaces_vs_insert_baseline']) {
      expect(targets[name]!.pass).toBe(false);
    }
    expect(targets.me_vs_constant_baseline!.pass).toBe(true);
  });

  it('fail the flood targets when a flood answer is not a 401', () => {
    const run = benchRun();
    run.flood.non401 = 2;
    const targets = targetsOf(run);
    expect(targets.invalid_key_flood_transactions_per_answer!.pass).toBe(false);
    expect(targets.valid_me_beside_flood_vs_alone!.pass).toBe(false);
  });

  it('fail the mixed-traffic ratios when the mixed run or one of its parts had errors', () => {
    expect(mixedTargetsOf(mixedResult()).mixed_vs_parts!.pass).toBe(true);
    for (const faults of [{ mixed: { errors: 2 } }, { part: { non2xx: 10 } }]) {
      const targets = mixedTargetsOf(mixedResult(faults));
      expect(targets.mixed_vs_parts!.pass).toBe(false);
      expect(targets.mixed_webhooks_vs_parts!.pass).toBe(false);
      expect(targets.mixed_vs_parts!.target).toContain('FAILED');
    }
  });
});
