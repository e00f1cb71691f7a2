// The bench's output: the scenario table, the fixed-rate latencies, the flood and ceiling
// lines, and every target with its value and PASS / MISS, computed here so that a run's
// verdict never depends on someone doing the arithmetic; all of it also in a JSON file.
import { writeFileSync } from 'node:fs';
import type { CitusCounts } from './citus-counts.js';
import type { DeliveryResult } from './delivery.js';
import type { FloodResult } from './flood.js';
import { formatGroupSizes, type GroupSizes } from './group-sizes.js';
import type { LoadResult } from './load.js';
import { SERVICE_CONNECTION_BOUND, type MixedResult } from './mixed.js';
import type { OpenLoopResult } from './open-loop.js';

export interface ScenarioResult extends LoadResult {
  name: string;
  serverPeakRssBytes: number;
  /** CPU time (user + system) of the server process per answer, warm-up included; null when it cannot be read. */
  serverCpuMicrosecondsPerAnswer: number | null;
  leadsPerSecond?: number;
  /** Write scenarios: how many requests the service's groups held. */
  groupSizes?: GroupSizes;
  /** `--citus`: what an answer cost the cluster (scripts/bench/citus-counts.ts). */
  citusCounts?: CitusCounts;
}

/** A fixed-rate run (open model), by default at half the scenario's measured maximum. */
export interface FixedRateResult extends OpenLoopResult {
  name: string;
  serverPeakRssBytes: number;
  groupSizes?: GroupSizes;
  citusCounts?: CitusCounts;
}

export interface CeilingResult {
  statementsPerSecond: number;
  statements: number;
}

export interface BenchRun {
  connections: number;
  scenarios: ScenarioResult[];
  named: Record<'constant' | 'insert' | 'readBaseline' | 'sameWork' | 'me' | 'read' | 'created' | 'updated' | 'manyCreated' | 'manyUpdated' | 'batch' | 'large', ScenarioResult>;
  fixedRate: FixedRateResult[];
  /** Single POST /leads at 20 req/s: nothing to coalesce. */
  lowRate: FixedRateResult;
  /** Its p50 on the build before, when the run was given it (`--reference-p50-at-20`). */
  referenceLowRateP50: number | null;
  delivery: DeliveryResult;
  flood: FloodResult;
  serverPeakRssBytes: number;
  ceilings: { insert: CeilingResult; leadWrite: CeilingResult };
  /** The mixed-traffic scenarios (issue 54). */
  mixed: MixedResult;
}

/** Latency target of the fixed-rate runs (issue 13): p99 under this many ms at half the maximum rate. */
export const FIXED_RATE_P99_MS = 20;
/** Round three (issue 20) must not raise the fixed-rate p99 above what round two measured, per scenario. */
const ROUND_TWO_FIXED_RATE_P99_MS: Record<string, number> = { '1 GET /me': 34.67, '2 GET /leads/{id}': 47.27, '3 POST /leads new person': 32.59 };
/** POST /leads/batch leads/s of round two: group commit must not make batches slower. */
const ROUND_TWO_BATCH_LEADS_PER_SECOND = 10_099;
/** How much slower a lone POST /leads may be than on the build before (p50 at 20 req/s). */
const LOW_RATE_P50_SLACK_MS = 0.5;
const RSS_LIMIT_MB = 200;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

type Target = { value: number | string; pass: boolean | null; target: string };

/** What a run's counts need for its figures to mean anything. */
interface Answered {
  name?: string;
  requests: number;
  errors: number;
  non2xx: number;
  timeouts?: number;
}

/**
 * Why a run's figures cannot stand for the service's speed, or null: an error, a timeout or an
 * answer other than 2xx (a refused key answers fast), or nothing measured at all.
 */
export function brokenBecause(run: Answered): string | null {
  const timeouts = run.timeouts ?? 0;
  if (run.errors === 0 && timeouts === 0 && run.non2xx === 0 && run.requests > 0) return null;
  return `${run.name ? `${run.name}: ` : ''}${run.errors} errors, ${timeouts} timeouts, ${run.non2xx} non-2xx, ${run.requests} requests`;
}

/** A target measured on broken runs fails, whatever its value: its figure means nothing. */
function measuredOn(target: Target, ...runs: Answered[]): Target {
  const reasons = runs.map(brokenBecause).filter((reason) => reason !== null);
  return reasons.length === 0 ? target : { ...target, pass: false, target: `${target.target}; FAILED, measured on broken runs (${reasons.join('; ')})` };
}

export function targetsOf(run: BenchRun): Record<string, Target> {
  const { named, delivery, flood } = run;
  const ratio = (numerator: ScenarioResult, denominator: ScenarioResult, floor: number): Target => {
    const value = numerator.requestsPerSecond / Math.max(denominator.requestsPerSecond, 1e-9);
    return measuredOn(
      { value: round(value), pass: value >= floor, target: `>= ${floor} (${numerator.requestsPerSecond.toFixed(0)} / ${denominator.requestsPerSecond.toFixed(0)} req/s)` },
      numerator,
      denominator,
    );
  };
  const targets: Record<string, Target> = {
    me_vs_constant_baseline: ratio(named.me, named.constant, 0.6),
    lead_read_vs_pk_select_baseline: ratio(named.read, named.readBaseline, 0.6),
    new_lead_vs_same_work_baseline: ratio(named.created, named.sameWork, 0.7),
    new_lead_vs_insert_baseline: ratio(named.created, named.insert, 0.5),
    existing_lead_vs_insert_baseline: ratio(named.updated, named.insert, 0.25),
    new_lead_100_workspaces_vs_insert_baseline: ratio(named.manyCreated, named.insert, 0.4),
    existing_lead_100_workspaces_vs_insert_baseline: ratio(named.manyUpdated, named.insert, 0.2),
    batch_leads_per_second: measuredOn(
      {
        value: round(named.batch.leadsPerSecond ?? 0, 0),
        pass: (named.batch.leadsPerSecond ?? 0) >= ROUND_TWO_BATCH_LEADS_PER_SECOND,
        target: `>= ${ROUND_TWO_BATCH_LEADS_PER_SECOND} (round two)`,
      },
      named.batch,
    ),
    single_post_p50_ms_at_20_rps: measuredOn(
      {
        value: run.lowRate.p50,
        pass: run.referenceLowRateP50 === null ? null : run.lowRate.p50 <= run.referenceLowRateP50 + LOW_RATE_P50_SLACK_MS,
        target:
          run.referenceLowRateP50 === null
            ? `within ${LOW_RATE_P50_SLACK_MS} ms of the build before (run with --reference-p50-at-20)`
            : `<= ${run.referenceLowRateP50} + ${LOW_RATE_P50_SLACK_MS} (the build before, same machine)`,
      },
      run.lowRate,
    ),
  };
  for (const fixed of run.fixedRate) {
    const roundTwo = ROUND_TWO_FIXED_RATE_P99_MS[fixed.name];
    targets[`fixed_rate_p99_ms: ${fixed.name}`] = measuredOn(
      {
        value: fixed.p99,
        pass: fixed.p99 < FIXED_RATE_P99_MS || (roundTwo !== undefined && fixed.p99 <= roundTwo),
        target: `< ${FIXED_RATE_P99_MS}, or <= round two's ${roundTwo ?? '-'} at ${fixed.rate.toFixed(0)} req/s (p50 ${fixed.p50}, p99.9 ${fixed.p999})`,
      },
      fixed,
    );
  }
  targets.deliveries_per_second = delivery.skipped
    ? { value: `skipped: ${delivery.skipped}`, pass: null, target: '>= 1000, 0 duplicates, 0 lost' }
    : {
        value: round(delivery.deliveriesPerSecond, 0),
        pass: delivery.deliveriesPerSecond >= 1000 && delivery.duplicates === 0 && delivery.lost === 0,
        target: `>= 1000, 0 duplicates (${delivery.duplicates}), 0 lost (${delivery.lost}); worker CPU ${delivery.workerCpuMicrosecondsPerDelivery.toFixed(0)} us per delivery`,
      };
  targets.server_peak_rss_mb = {
    value: round(run.serverPeakRssBytes / 1024 / 1024, 0),
    pass: run.serverPeakRssBytes < RSS_LIMIT_MB * 1024 * 1024,
    target: `< ${RSS_LIMIT_MB} over every scenario`,
  };
  // Targets of the earlier performance round, still reported.
  targets.new_lead_p99_ms_closed_loop = measuredOn({ value: named.created.p99, pass: named.created.p99 < 50, target: `< 50 at ${run.connections} connections` }, named.created);
  targets.batch_leads_vs_single = measuredOn(
    {
      value: round((named.batch.leadsPerSecond ?? 0) / named.created.requestsPerSecond),
      pass: (named.batch.leadsPerSecond ?? 0) >= named.created.requestsPerSecond * 10,
      target: '>= 10x',
    },
    named.batch,
    named.created,
  );
  targets.large_workspace_p50_vs_new_lead_p50 = measuredOn(
    { value: round(named.large.p50 / Math.max(named.created.p50, 0.001)), pass: named.large.p50 <= named.created.p50 * 1.25, target: '<= 1.25' },
    named.large,
    named.created,
  );
  // The flood's answers are 401 by design: what breaks it is an answer of any other kind.
  const floodAnswers = { ...flood.flood, non2xx: flood.non401 };
  targets.invalid_key_flood_transactions_per_answer = measuredOn(
    { value: round(flood.transactionsPerAnswer, 5), pass: flood.transactionsPerAnswer < 0.01, target: '< 0.01' },
    floodAnswers,
  );
  const besideFlood = flood.validWithFlood.requestsPerSecond / Math.max(flood.validAlone.requestsPerSecond, 1e-9);
  targets.valid_me_beside_flood_vs_alone = measuredOn(
    {
      value: round(besideFlood),
      pass: besideFlood >= 0.8,
      target: `>= 0.8 (no more than 20% slower beside a flood of ${flood.floodRate} answers/s)`,
    },
    flood.validAlone,
    flood.validWithFlood,
    floodAnswers,
  );
  Object.assign(targets, mixedTargetsOf(run.mixed));
  return targets;
}

/** How much slower a lone POST /leads may be right after the mixed load than right before it (p50). */
const LONE_SLACK = { ratio: 1.25, ms: 1 };

/** Issue 54's targets: mixed traffic close to its parts, and webhooks that keep up with it. */
export function mixedTargetsOf(mixed: MixedResult): Record<string, Target> {
  const parts = Object.values(mixed.parts);
  const targets: Record<string, Target> = {};
  const versusParts = (run: NonNullable<MixedResult['mixed']>, floor: number): Target => {
    const value = run.requestsPerSecond / Math.max(mixed.partsHarmonicMean, 1e-9);
    return measuredOn(
      {
        value: round(value),
        pass: value >= floor,
        target: `>= ${floor} (${run.requestsPerSecond.toFixed(0)} req/s / ${mixed.partsHarmonicMean.toFixed(0)}, the harmonic mean of its parts: ${parts.map((part) => part.requestsPerSecond.toFixed(0)).join(', ')})`,
      },
      run,
      ...parts,
    );
  };
  const lone = (run: NonNullable<MixedResult['mixed']>): Target => {
    const limit = Math.max(run.loneBefore.p50 * LONE_SLACK.ratio, run.loneBefore.p50 + LONE_SLACK.ms);
    return measuredOn(
      { value: run.loneAfter.p50, pass: run.loneAfter.p50 <= limit, target: `<= ${limit.toFixed(2)} (p50 before the load ${run.loneBefore.p50} ms, + 25% or 1 ms)` },
      { ...run.loneBefore, name: 'lone request before' },
      { ...run.loneAfter, name: 'lone request after' },
    );
  };
  const leftBehind = (run: NonNullable<MixedResult['mixed']>): Target => ({
    value: run.leftBehind.events + run.leftBehind.deliveries,
    pass: run.leftBehind.events + run.leftBehind.deliveries === 0,
    target: `0 (${run.leftBehind.events} lead events unprocessed, ${run.leftBehind.deliveries} deliveries not final, after the drain)`,
  });
  if (mixed.mixed) {
    targets.mixed_vs_parts = versusParts(mixed.mixed, 0.8);
    targets.mixed_left_behind = leftBehind(mixed.mixed);
    targets.mixed_lone_post_p50_ms_after_vs_before = lone(mixed.mixed);
  }
  const hooked = mixed.webhooks;
  if (hooked) {
    targets.mixed_webhooks_vs_parts = versusParts(hooked, 0.6);
    targets.mixed_webhooks_delivery_lag_p99_s = {
      value: hooked.lag.p99,
      pass: hooked.lag.count > 0 && hooked.lag.p99 <= 5,
      target: `<= 5 (p50 ${hooked.lag.p50} s, max ${hooked.lag.max} s over ${hooked.lag.count} first attempts; ${hooked.deliveriesMade} deliveries made)`,
    };
    // Not growing: over the load (its first tenth aside), the backlog grows by less than 2% of the deliveries made each second.
    const madePerSecond = hooked.deliveriesMade / Math.max(hooked.samples.filter((sample) => sample.t > 0).length, 1);
    const growthLimit = Math.max(1, madePerSecond * 0.02);
    targets.mixed_webhooks_backlog_growth_per_s = {
      value: hooked.backlogSlopePerSecond,
      pass: hooked.backlogSlopePerSecond <= growthLimit,
      target: `<= ${growthLimit.toFixed(1)} (least-squares slope of lead events + due deliveries; max backlog ${hooked.maxBacklog})`,
    };
    // After the load: a burst queued at once, drained at half the delivery scenario's rate or better.
    const reference = mixed.deliveryScenarioPerSecond;
    const burstRatio = reference ? hooked.burst.deliveriesPerSecond / reference : null;
    targets.mixed_webhooks_after_load_vs_delivery_scenario = {
      value: burstRatio === null ? 'no delivery scenario' : round(burstRatio),
      pass: burstRatio === null ? null : !hooked.burst.timedOut && burstRatio >= 0.5,
      target: `>= 0.5 (${hooked.burst.events} events queued after the load: ${hooked.burst.deliveriesPerSecond} deliveries/s against ${reference?.toFixed(0) ?? '-'}/s; the load's own backlog: ${hooked.drain.backlogAtStop} at the stop, drained in ${hooked.drain.seconds} s)`,
    };
    targets.mixed_webhooks_left_behind = leftBehind(hooked);
    targets.mixed_webhooks_duplicates = {
      value: hooked.receiver.duplicates,
      pass: hooked.receiver.duplicates === 0,
      target: `0 (${hooked.receiver.answered} answered 200, ${hooked.receiver.refused503} answered 503)`,
    };
    targets.mixed_webhooks_lone_post_p50_ms_after_vs_before = lone(hooked);
  }
  const runs = [mixed.mixed, mixed.webhooks].filter((run) => run !== null);
  targets.mixed_rss_peak_mb = { value: mixed.rss.peakMb, pass: mixed.rss.peakMb < RSS_LIMIT_MB, target: `< ${RSS_LIMIT_MB}` };
  targets.mixed_rss_growth_after_first_minute_mb = {
    value: mixed.rss.growthAfterFirstMinuteMb,
    pass: mixed.rss.growthAfterFirstMinuteMb < 40,
    target: `< 40 (${mixed.rss.atOneMinuteMb} MB one minute into the mixed load)`,
  };
  const connections = Math.max(0, ...runs.map((run) => run.maxConnections));
  targets.mixed_pg_connections = {
    value: connections,
    pass: connections <= SERVICE_CONNECTION_BOUND,
    target: `<= ${SERVICE_CONNECTION_BOUND} (API pool 10 + LISTEN 1 + worker pool 4; the mixed service's own sessions, named with its pid)`,
  };
  return targets;
}

/** The mixed scenarios' lines: each part, each mixed run, the worker's figures, and their targets. */
export function mixedLines(mixed: MixedResult): string {
  const line = (run: ScenarioResult) =>
    `${run.name}: ${run.requestsPerSecond.toFixed(0)} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms, errors ${run.errors + (run.timeouts ?? 0)}/${run.non2xx}` +
    (run.serverCpuMicrosecondsPerAnswer == null ? '' : `, server CPU ${run.serverCpuMicrosecondsPerAnswer.toFixed(0)} us/answer`);
  const lines = [...Object.values(mixed.parts).map(line), `harmonic mean of the parts (40/20/10/20/10): ${mixed.partsHarmonicMean.toFixed(0)} req/s`];
  for (const run of [mixed.mixed, mixed.webhooks]) {
    if (!run) continue;
    lines.push(
      `${line(run)}, ${(run.requestsPerSecond / mixed.partsHarmonicMean).toFixed(2)}x the parts`,
      `  backlog every second (lead events to fan out / due deliveries): ${run.samples.map((sample) => `${sample.events}/${sample.due}`).join(' ')}`,
      `  max backlog ${run.maxBacklog}, slope ${run.backlogSlopePerSecond}/s; PostgreSQL connections at most ${run.maxConnections} ${JSON.stringify(run.maxConnectionsByPool)}; left behind ${JSON.stringify(run.leftBehind)}`,
      `  lone POST /leads at 20 req/s: p50 ${run.loneBefore.p50} ms before, ${run.loneAfter.p50} ms after (p99 ${run.loneBefore.p99} / ${run.loneAfter.p99})`,
    );
  }
  const hooked = mixed.webhooks;
  if (hooked)
    lines.push(
      `  ${hooked.deliveriesMade} deliveries; lag from the lead to its first attempt p50 ${hooked.lag.p50} s, p99 ${hooked.lag.p99} s, max ${hooked.lag.max} s`,
      `  drain: ${hooked.drain.backlogAtStop} at the stop, drained in ${hooked.drain.seconds} s (${hooked.drain.perSecond}/s${hooked.drain.timedOut ? ', TIMED OUT' : ''}; ${hooked.drain.attempts} attempts meanwhile); delivery scenario ${mixed.deliveryScenarioPerSecond?.toFixed(0) ?? '-'}/s`,
      `  after the load: ${hooked.burst.events} events queued at once, ${hooked.burst.firstAttempts} first attempts at ${hooked.burst.deliveriesPerSecond} deliveries/s${hooked.burst.timedOut ? ' (TIMED OUT)' : ''}`,
      `  receiver: ${hooked.receiver.answered} answered 200, ${hooked.receiver.refused503} answered 503, ${hooked.receiver.duplicates} duplicates`,
    );
  lines.push(`mixed service RSS: peak ${mixed.rss.peakMb} MB, ${mixed.rss.atOneMinuteMb} MB one minute into the mixed load, +${mixed.rss.growthAfterFirstMinuteMb} MB after`);
  const targets = mixedTargetsOf(mixed);
  const table = markdownTable(
    ['target', 'value', 'goal', 'verdict'],
    Object.entries(targets).map(([name, target]) => [name, String(target.value), target.target, target.pass === null ? 'SKIP' : target.pass ? 'PASS' : 'MISS']),
  );
  return `${lines.join('\n')}\n\n${table}\n`;
}

/**
 * `--citus`: per answer, what each scenario cost the cluster (per delivery for scenario 7), or
 * null when nothing was counted.
 */
export function citusCountsTable(scenarios: { name: string; citusCounts?: CitusCounts }[], delivery?: DeliveryResult): string | null {
  const counted = [...scenarios, ...(delivery?.citusCounts ? [{ name: `7 delivery (per delivery)`, citusCounts: delivery.citusCounts }] : [])].filter(
    (scenario): scenario is { name: string; citusCounts: CitusCounts } => scenario.citusCounts !== undefined,
  );
  if (counted.length === 0) return null;
  return markdownTable(
    ['Citus, per answer', 'round trips to workers (by worker)', 'worker transaction blocks', 'two-phase commits', 'statements: one shard', 'statements: several shards', 'answers'],
    counted.map(({ name, citusCounts: counts }) => [
      name,
      `${counts.roundTrips} (${counts.roundTripsByWorker.join(' + ')})`,
      `${counts.workerTransactionBlocks}`,
      `${counts.twoPhaseCommits}`,
      `${counts.singleShardStatements}`,
      `${counts.multiShardStatements}`,
      `${counts.answers}`,
    ]),
  );
}

/** Prints the report on stdout and writes it, with `extra` (machine, options), as JSON to `file`. */
export function report(run: BenchRun, extra: Record<string, unknown>, file: string): void {
  const { delivery, flood, ceilings, named } = run;
  const rows = run.scenarios.map((scenario) => [
    scenario.name,
    scenario.requestsPerSecond.toFixed(0) + (scenario.leadsPerSecond ? ` (${scenario.leadsPerSecond.toFixed(0)} leads/s)` : ''),
    `${scenario.p50}`,
    `${scenario.p99}`,
    `${scenario.errors + scenario.timeouts}/${scenario.non2xx}`,
    mb(scenario.serverPeakRssBytes),
    scenario.serverCpuMicrosecondsPerAnswer == null ? '' : scenario.serverCpuMicrosecondsPerAnswer.toFixed(0),
  ]);
  rows.push(
    delivery.skipped
      ? [`7 delivery (${delivery.events} events)`, `skipped: ${delivery.skipped}`, '', '', '', '', '']
      : [
          `7 delivery (${delivery.events} events, ${delivery.workers} workers)`,
          `${delivery.deliveriesPerSecond.toFixed(0)} deliveries/s`,
          '',
          '',
          `dup ${delivery.duplicates} / lost ${delivery.lost}`,
          `${mb(delivery.workerPeakRssBytes)} (worker)`,
          delivery.workerCpuMicrosecondsPerDelivery.toFixed(0),
        ],
  );
  const table = markdownTable(['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors/non-2xx', 'peak RSS', 'CPU us/answer'], rows);
  const fixedRateTable = markdownTable(
    ['fixed rate (open model): half the maximum, or as named', 'rate/s', 'answered/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'errors/non-2xx', 'peak RSS'],
    [...run.fixedRate, run.lowRate].map((fixed) => [
      fixed.name,
      fixed.rate.toFixed(0),
      fixed.answeredPerSecond.toFixed(0),
      `${fixed.p50}`,
      `${fixed.p99}`,
      `${fixed.p999}`,
      `${fixed.max}`,
      `${fixed.errors}/${fixed.non2xx}`,
      mb(fixed.serverPeakRssBytes),
    ]),
  );
  const grouped = [...run.scenarios, ...run.fixedRate.map((fixed) => ({ ...fixed, name: `${fixed.name} (fixed rate)` })), run.lowRate].filter(
    (scenario) => scenario.groupSizes && scenario.groupSizes.groups > 0,
  );
  const groupTable = markdownTable(
    ['write groups (requests per transaction)', 'groups'],
    grouped.map((scenario) => [scenario.name, formatGroupSizes(scenario.groupSizes)]),
  );
  const targets = targetsOf(run);
  const targetTable = markdownTable(
    ['target', 'value', 'goal', 'verdict'],
    Object.entries(targets).map(([name, target]) => [name, String(target.value), target.target, target.pass === null ? 'SKIP' : target.pass ? 'PASS' : 'MISS']),
  );
  const ceilingBound = ceilings.leadWrite.statementsPerSecond / named.insert.requestsPerSecond;
  const ceilingLines = [
    `PostgreSQL-only ceiling (statements straight through pg, no HTTP; pool 10, ${run.connections} callers):`,
    `  baseline INSERT alone:   ${ceilings.insert.statementsPerSecond.toFixed(0)} statements/s`,
    `  new-lead write alone:    ${ceilings.leadWrite.statementsPerSecond.toFixed(0)} statements/s (lead + 3 match keys + 2 tags + event, the one statement every new lead needs)`,
    `  => scenario 3 can reach at most ${ceilingBound.toFixed(2)} of the INSERT baseline on this machine (new-lead write alone / baseline req/s)`,
  ];
  const floodLines = [
    `8 invalid-key flood (GET /me with random well-formed keys, ${run.connections} connections):`,
    `  ${flood.flood.requestsPerSecond.toFixed(0)} answers/s, p50 ${flood.flood.p50} ms, p99 ${flood.flood.p99} ms; answers by status ${JSON.stringify(flood.flood.statusCounts)} (warm-up included)`,
    `  ${flood.transactions} database transactions for ${flood.flood.answersIncludingWarmup} answers = ${flood.transactionsPerAnswer.toFixed(5)} per answer (pg_stat_database)`,
    `  CPU per answer: service ${flood.serviceCpuMicrosecondsPerAnswer.toFixed(0)} us, PostgreSQL ${flood.databaseCpuMicrosecondsPerAnswer === null ? 'not measured (not on this machine)' : `${flood.databaseCpuMicrosecondsPerAnswer.toFixed(0)} us`}`,
    `  valid GET /me at ${run.connections} connections: ${flood.validAlone.requestsPerSecond.toFixed(0)} req/s alone (p99 ${flood.validAlone.p99} ms), ${flood.validWithFlood.requestsPerSecond.toFixed(0)} req/s (p99 ${flood.validWithFlood.p99} ms) beside a flood at ${flood.floodRate}/s (it got ${flood.floodDuringValid.requestsPerSecond.toFixed(0)} answers/s)`,
  ];
  const deliveryLine = delivery.skipped
    ? ''
    : `7 delivery: worker CPU per delivery ${delivery.workerCpuMicrosecondsPerDelivery.toFixed(0)} us from the first delivery on, ${delivery.workerCpuMicrosecondsPerDeliveryWithStartup.toFixed(0)} us with start-up (both workers)\n\n`;
  const mixedLinesOnly = mixedLines(run.mixed).split('\n\n')[0];
  const countsTable = citusCountsTable([...run.scenarios, ...run.fixedRate.map((fixed) => ({ ...fixed, name: `${fixed.name} (fixed rate)` })), run.lowRate], delivery);
  process.stdout.write(
    `\n${table}\n\n${fixedRateTable}\n\n${groupTable}\n\n${countsTable ? `${countsTable}\n\n` : ''}${deliveryLine}${floodLines.join('\n')}\n\n${mixedLinesOnly}\n\n${targetTable}\n\n${ceilingLines.join('\n')}\n`,
  );

  const results = {
    ...extra,
    scenarios: run.scenarios,
    fixed_rate: run.fixedRate,
    low_rate: run.lowRate,
    reference_low_rate_p50_ms: run.referenceLowRateP50,
    delivery,
    invalid_key_flood: {
      flood: flood.flood,
      transactions: flood.transactions,
      transactions_per_answer: round(flood.transactionsPerAnswer, 6),
      service_cpu_us_per_answer: round(flood.serviceCpuMicrosecondsPerAnswer, 0),
      database_cpu_us_per_answer: flood.databaseCpuMicrosecondsPerAnswer === null ? null : round(flood.databaseCpuMicrosecondsPerAnswer, 0),
      non_401_answers: flood.non401,
      flood_rate_beside_valid_client: flood.floodRate,
      valid_me_alone: flood.validAlone,
      valid_me_beside_flood: flood.validWithFlood,
      flood_beside_valid_client: flood.floodDuringValid,
      server_peak_rss_bytes: flood.serverPeakRssBytes,
    },
    server_peak_rss_bytes: run.serverPeakRssBytes,
    mixed: run.mixed,
    pg_ceiling: {
      insert_statements_per_second: round(ceilings.insert.statementsPerSecond, 0),
      new_lead_write_statements_per_second: round(ceilings.leadWrite.statementsPerSecond, 0),
      scenario_3_vs_insert_baseline_at_most: round(ceilingBound),
    },
    targets,
    table,
    fixed_rate_table: fixedRateTable,
    group_table: groupTable,
    citus_counts_table: countsTable,
    target_table: targetTable,
  };
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}
