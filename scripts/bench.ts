// `npm run bench [-- --smoke] [--duration S] [--warmup S] [--connections N]`
//
// Starts the real service against the PostgreSQL and Redis it is given (DATABASE_URL names
// the server; a fresh database is created on it and dropped afterwards), seeds a workspace,
// and drives each scenario with autocannon from a separate process, next to two bare
// express baselines under the same load. Prints a table and writes bench/results.json.
// Targets are reported, not asserted: the exit code is non-zero only when something broke
// (a crash, errors or non-2xx answers, lost deliveries, a delivery scenario that could not run).
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { runDeliveryScenario, type DeliveryResult } from './bench/delivery.js';
import { databaseUrl } from './database-url.js';
import { runFloodScenario, type FloodResult } from './bench/flood.js';
import type { LoadResult, Workload } from './bench/load.js';
import { seedLeads } from './bench/seed.js';
import {
  adminQuery, freePort, killAllChildren, nodeFlagsOf, ROOT, RssSampler, runCli, runLoad, spawnChild, spawnTsx, stopChild, waitForHttp, waitForIdleDatabase,
} from './bench/support.js';

const { values: flags } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    'flood-rate': { type: 'string' },
  },
});
const smoke = flags.smoke!;
const durationSeconds = Number(flags.duration ?? (smoke ? 1 : 15));
const warmupSeconds = Number(flags.warmup ?? (smoke ? 0 : 5));
const connections = Number(flags.connections ?? 32);
// The fixed rate of the flood beside the valid client in scenario 8 (see bench/README.md).
const floodRate = Number(flags['flood-rate'] ?? 500);
const largeWorkspaceLeads = smoke ? 1_000 : 1_000_000;
const deliveryEvents = smoke ? 200 : 10_000;
const INITIAL_LEADS = 1_000;

const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const benchDatabase = `lead_intake_bench_${Date.now()}`;
const benchUrl = databaseUrl(adminUrl, benchDatabase);
const runId = Date.now().toString(36);

interface ScenarioResult extends LoadResult {
  name: string;
  serverPeakRssBytes: number;
  leadsPerSecond?: number;
}

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

let idlePool: pg.Pool | null = null;
let postgresVersion = 'unknown';
const loadAtStart = os.loadavg().map((load) => Number(load.toFixed(2)));

async function measure(name: string, url: string, token: string | null, workload: Workload, rssPid: number | null): Promise<ScenarioResult> {
  // A 100-lead batch takes longer than a one-second smoke window at this concurrency.
  const duration = workload.kind === 'new-batch' ? Math.max(durationSeconds, 3) : durationSeconds;
  log(`${name}: ${warmupSeconds}s warm-up + ${duration}s at ${connections} connections`);
  const rss = new RssSampler(() => (rssPid ? [rssPid] : [])).start();
  const result = await runLoad({ url, token, connections, warmupSeconds, durationSeconds: duration, workload });
  const serverPeakRssBytes = rss.stop();
  // Requests still in flight when the load stopped finish before the next scenario starts.
  if (idlePool) await waitForIdleDatabase(idlePool);
  await new Promise((resolve) => setTimeout(resolve, 500));
  return { name, ...result, serverPeakRssBytes };
}

interface CeilingResult { statementsPerSecond: number; statements: number }

/** The PostgreSQL-only ceiling of a statement (see bench/pg-ceiling.ts), in its own process. */
async function ceiling(mode: 'insert' | 'lead-write', workspaceId: number): Promise<CeilingResult> {
  log(`ceiling ${mode}: ${Math.min(warmupSeconds, 2)}s warm-up + ${durationSeconds}s at ${connections} callers`);
  const child = spawnTsx('scripts/bench/pg-ceiling.ts', [JSON.stringify({
    databaseUrl: benchUrl, mode, workspaceId, concurrency: connections, poolSize: 10, warmupSeconds: Math.min(warmupSeconds, 2), durationSeconds,
  })], {}, { stdout: 'pipe' });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`pg-ceiling ${mode} failed with exit code ${code}`);
  return JSON.parse(stdout) as CeilingResult;
}

async function withBaseline<T>(mode: 'constant' | 'insert', work: (url: string, pid: number) => Promise<T>): Promise<T> {
  const port = await freePort();
  const child = spawnTsx('scripts/bench/baseline.ts', [mode], { PORT: String(port), DATABASE_URL: benchUrl });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/`);
    return await work(`http://127.0.0.1:${port}`, child.pid!);
  } finally {
    await stopChild(child);
  }
}

async function main(): Promise<void> {
  log(`mode ${smoke ? 'smoke' : 'full'}; database ${benchDatabase} on ${new URL(adminUrl).host}; Redis ${redisUrl}`);
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-needed.mjs')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  await adminQuery(adminUrl, `CREATE DATABASE "${benchDatabase}"`);
  const pool = new pg.Pool({ connectionString: benchUrl, max: 2 });
  idlePool = pool;
  const port = await freePort();
  // 32 connections against a pool of 10 queue on purpose: with the default 1.5 s wait, a
  // loaded machine would turn the slowest batches into 503s (load shedding), which is not
  // what the bench measures; it waits up to 30 s instead.
  const service = spawnChild([...nodeFlagsOf('start'), path.join(ROOT, 'dist', 'src', 'main.js')], {
    DATABASE_URL: benchUrl, REDIS_URL: redisUrl, PORT: String(port), LOG_LEVEL: 'warn', WORKER: 'off', RATE_LIMIT_PER_MINUTE: '1000000000',
    DATABASE_CONNECT_TIMEOUT_MS: '30000',
  });
  const serviceRss = new RssSampler(() => [service.pid!]).start();
  const cleanup = async () => {
    await stopChild(service);
    await pool.end().catch(() => {});
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${benchDatabase}" WITH (FORCE)`).catch(() => {});
  };
  process.once('SIGINT', () => {
    killAllChildren();
    void cleanup().finally(() => process.exit(130));
  });

  try {
    postgresVersion = (await pool.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    const base = `http://127.0.0.1:${port}`;
    await waitForHttp(`${base}/api/v1/me`);
    const demo = await runCli(['demo'], { DATABASE_URL: benchUrl, LOG_LEVEL: 'warn' });
    const token = demo.key.token as string;
    const workspaceId = demo.workspace.id as number;
    const seeded = await seedLeads(benchUrl, workspaceId, 1, INITIAL_LEADS);
    const pid = service.pid!;

    const constant = await withBaseline('constant', (url, baselinePid) => measure('baseline: express constant JSON', url, null, { kind: 'get', path: '/me' }, baselinePid));
    const insert = await withBaseline('insert', (url, baselinePid) => measure('baseline: express + pg INSERT', url, null, { kind: 'baseline-insert' }, baselinePid));
    const insertCeiling = await ceiling('insert', workspaceId);

    const me = await measure('1 GET /me', base, token, { kind: 'get', path: '/api/v1/me' }, pid);
    // Here, while the database is quiet: before the intake scenarios give autovacuum work.
    const flood = await runFloodScenario({ url: base, token, benchUrl, connections, warmupSeconds, durationSeconds, floodRate, serverPid: pid, log });
    const read = await measure('2 GET /leads/{id}', base, token, { kind: 'get-random-lead', ids: { from: seeded.firstId, to: seeded.lastId } }, pid);
    const created = await measure('3 POST /leads new person', base, token, { kind: 'new-lead', runId: `${runId}a`, phoneBase: 2_000_000_000 }, pid);
    const updated = await measure('4 POST /leads existing person', base, token, { kind: 'existing-lead', seeded: INITIAL_LEADS }, pid);
    const batch = await measure('5 POST /leads/batch 100 new', base, token, { kind: 'new-batch', runId: `${runId}b`, phoneBase: 3_000_000_000, size: 100 }, pid);
    batch.leadsPerSecond = batch.requestsPerSecond * 100;
    const leadWriteCeiling = await ceiling('lead-write', workspaceId);
    await waitForIdleDatabase(pool);

    log(`seeding ${largeWorkspaceLeads.toLocaleString('en')} more leads`);
    const { insertSeconds: seedSeconds, vacuumSeconds } = await seedLeads(benchUrl, workspaceId, INITIAL_LEADS + 1, INITIAL_LEADS + largeWorkspaceLeads);
    const leadCount = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM leads WHERE workspace_id = $1', [workspaceId])).rows[0]!.n);
    log(`seeded in ${seedSeconds.toFixed(1)} s (+ ${vacuumSeconds.toFixed(1)} s VACUUM ANALYZE); the workspace holds ${leadCount.toLocaleString('en')} leads`);
    const large = await measure(`6 POST /leads new person, ${leadCount.toLocaleString('en')} leads`, base, token, { kind: 'new-lead', runId: `${runId}c`, phoneBase: 4_000_000_000 }, pid);

    const serverPeakRssBytes = serviceRss.stop();
    await stopChild(service);

    // The intake scenarios queued events of their own (WORKER=off left them): set them aside
    // so the delivery scenario measures exactly its own events.
    await pool.query('UPDATE outbox SET processed_at = now() WHERE processed_at IS NULL');
    log(`7 delivery: ${deliveryEvents} events, 2 workers`);
    const delivery = await runDeliveryScenario({ pool, databaseUrl: benchUrl, workspaceId, events: deliveryEvents, workers: 2, timeoutMs: 120_000 });
    if (delivery.skipped) process.stdout.write(`7 delivery: skipped: ${delivery.skipped}\n`);

    const scenarios = [constant, insert, me, read, created, updated, batch, large];
    report(scenarios, { constant, insert, me, created, batch, large }, delivery, flood, serverPeakRssBytes, { leadCount, seedSeconds, vacuumSeconds }, { insert: insertCeiling, leadWrite: leadWriteCeiling });
    const broken = [...scenarios, { ...flood.validAlone, name: '8 valid GET /me alone' }, { ...flood.validWithFlood, name: '8 valid GET /me beside the flood' }]
      .filter((scenario) => scenario.errors > 0 || scenario.non2xx > 0 || scenario.requests === 0);
    const floodBroken = flood.non401 > 0 || [flood.flood, flood.floodDuringValid].some((run) => run.errors > 0 || run.timeouts > 0 || run.requests === 0);
    if (broken.length > 0 || floodBroken || delivery.skipped || delivery.lost > 0 || delivery.duplicates > 0) {
      log(`FAILED: ${[
        ...broken.map((scenario) => `${scenario.name}: ${scenario.errors} errors, ${scenario.non2xx} non-2xx, ${scenario.requests} requests`),
        floodBroken ? `8 invalid-key flood: ${flood.non401} answers other than 401 (${JSON.stringify([flood.flood.statusCounts, flood.floodDuringValid.statusCounts])}), ${flood.flood.errors + flood.floodDuringValid.errors} errors, ${flood.flood.timeouts + flood.floodDuringValid.timeouts} timeouts` : '',
        delivery.lost || delivery.duplicates ? `delivery: ${delivery.lost} lost, ${delivery.duplicates} duplicates` : '',
        // The outbound side exists: a delivery scenario that could not run is a broken build, not a pass.
        delivery.skipped ? `7 delivery: skipped: ${delivery.skipped}` : '',
      ].filter(Boolean).join('; ')}`);
      process.exitCode = 1;
    }
  } finally {
    await cleanup();
  }
}

function report(
  scenarios: ScenarioResult[],
  named: Record<'constant' | 'insert' | 'me' | 'created' | 'batch' | 'large', ScenarioResult>,
  delivery: DeliveryResult,
  flood: FloodResult,
  serverPeakRssBytes: number,
  seed: { leadCount: number; seedSeconds: number; vacuumSeconds: number },
  ceilings: { insert: CeilingResult; leadWrite: CeilingResult },
): void {
  const rows = scenarios.map((scenario) => [
    scenario.name,
    scenario.requestsPerSecond.toFixed(0) + (scenario.leadsPerSecond ? ` (${scenario.leadsPerSecond.toFixed(0)} leads/s)` : ''),
    `${scenario.p50}`,
    `${scenario.p99}`,
    `${scenario.errors + scenario.timeouts}/${scenario.non2xx}`,
    mb(scenario.serverPeakRssBytes),
  ]);
  rows.push(delivery.skipped
    ? [`7 delivery (${delivery.events} events)`, `skipped: ${delivery.skipped}`, '', '', '', '']
    : [`7 delivery (${delivery.events} events, ${delivery.workers} workers)`, `${delivery.deliveriesPerSecond.toFixed(0)} deliveries/s`, '', '', `dup ${delivery.duplicates} / lost ${delivery.lost}`, `${mb(delivery.workerPeakRssBytes)} (worker)`]);
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors/non-2xx', 'peak RSS'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  const table = [line(header), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...rows.map(line)].join('\n');

  const ratio = (value: number, floor: number) => ({ value: Number(value.toFixed(2)), pass: value >= floor });
  const targets = {
    me_vs_constant_baseline: { ...ratio(named.me.requestsPerSecond / named.constant.requestsPerSecond, 0.6), target: '>= 0.6' },
    new_lead_vs_insert_baseline: { ...ratio(named.created.requestsPerSecond / named.insert.requestsPerSecond, 0.5), target: '>= 0.5' },
    new_lead_p99_ms: { value: named.created.p99, pass: named.created.p99 < 50, target: `< 50 at ${connections} connections` },
    batch_leads_vs_single: { ...ratio((named.batch.leadsPerSecond ?? 0) / named.created.requestsPerSecond, 10), target: '>= 10x' },
    large_workspace_p50_vs_new_lead_p50: { value: Number((named.large.p50 / Math.max(named.created.p50, 0.001)).toFixed(2)), pass: named.large.p50 <= named.created.p50 * 1.25, target: '<= 1.25' },
    deliveries_per_second: delivery.skipped
      ? { value: `skipped: ${delivery.skipped}`, pass: null, target: '>= 1000, 0 duplicates, 0 lost' }
      : { value: Number(delivery.deliveriesPerSecond.toFixed(0)), pass: delivery.deliveriesPerSecond >= 1000 && delivery.duplicates === 0 && delivery.lost === 0, target: '>= 1000, 0 duplicates, 0 lost' },
    invalid_key_flood_transactions_per_answer: { value: Number(flood.transactionsPerAnswer.toFixed(5)), pass: flood.transactionsPerAnswer < 0.01, target: '< 0.01' },
    valid_me_beside_flood_vs_alone: {
      ...ratio(flood.validWithFlood.requestsPerSecond / flood.validAlone.requestsPerSecond, 0.8),
      target: `>= 0.8 (no more than 20% slower beside a flood of ${flood.floodRate} answers/s)`,
    },
    server_peak_rss_mb: { value: Number((serverPeakRssBytes / 1024 / 1024).toFixed(0)), pass: serverPeakRssBytes < 200 * 1024 * 1024, target: '< 200' },
  };
  const targetLines = Object.entries(targets).map(([name, target]) => `${target.pass === null ? 'SKIP' : target.pass ? 'PASS' : 'MISS'}  ${name} = ${target.value} (target ${target.target})`);

  const ceilingBound = ceilings.leadWrite.statementsPerSecond / named.insert.requestsPerSecond;
  const ceilingLines = [
    `PostgreSQL-only ceiling (statements straight through pg, no HTTP; pool 10, ${connections} callers):`,
    `  baseline INSERT alone:   ${ceilings.insert.statementsPerSecond.toFixed(0)} statements/s`,
    `  new-lead write alone:    ${ceilings.leadWrite.statementsPerSecond.toFixed(0)} statements/s (lead + 3 match keys + 2 tags + event, the one statement every new lead needs)`,
    `  => scenario 3 can reach at most ${ceilingBound.toFixed(2)} of the INSERT baseline on this machine (new-lead write alone / baseline req/s)`,
  ];
  const floodLines = [
    `8 invalid-key flood (GET /me with random well-formed keys, ${connections} connections):`,
    `  ${flood.flood.requestsPerSecond.toFixed(0)} answers/s, p50 ${flood.flood.p50} ms, p99 ${flood.flood.p99} ms; answers by status ${JSON.stringify(flood.flood.statusCounts)} (warm-up included)`,
    `  ${flood.transactions} database transactions for ${flood.flood.answersIncludingWarmup} answers = ${flood.transactionsPerAnswer.toFixed(5)} per answer (pg_stat_database)`,
    `  CPU per answer: service ${flood.serviceCpuMicrosecondsPerAnswer.toFixed(0)} us, PostgreSQL ${flood.databaseCpuMicrosecondsPerAnswer === null ? 'not measured (not on this machine)' : `${flood.databaseCpuMicrosecondsPerAnswer.toFixed(0)} us`}`,
    `  valid GET /me at ${connections} connections: ${flood.validAlone.requestsPerSecond.toFixed(0)} req/s alone (p99 ${flood.validAlone.p99} ms), ${flood.validWithFlood.requestsPerSecond.toFixed(0)} req/s (p99 ${flood.validWithFlood.p99} ms) beside a flood at ${flood.floodRate}/s (it got ${flood.floodDuringValid.requestsPerSecond.toFixed(0)} answers/s)`,
  ];
  process.stdout.write(`\n${table}\n\n${floodLines.join('\n')}\n\n${targetLines.join('\n')}\n\n${ceilingLines.join('\n')}\n`);
  const machine = {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    memory_gib: Number((os.totalmem() / 1024 ** 3).toFixed(1)),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    postgres_host: new URL(adminUrl).host,
    postgres_version: postgresVersion,
    load_average_at_start: loadAtStart,
    load_average_at_end: os.loadavg().map((load) => Number(load.toFixed(2))),
    service_node_flags: nodeFlagsOf('start'),
  };
  const results = {
    date: new Date().toISOString(),
    mode: smoke ? 'smoke' : 'full',
    options: { durationSeconds, warmupSeconds, connections, largeWorkspaceLeads: seed.leadCount, deliveryEvents, seedSeconds: Number(seed.seedSeconds.toFixed(1)), vacuumSeconds: Number(seed.vacuumSeconds.toFixed(1)) },
    machine,
    scenarios,
    delivery,
    invalid_key_flood: {
      flood: flood.flood,
      transactions: flood.transactions,
      transactions_per_answer: Number(flood.transactionsPerAnswer.toFixed(6)),
      service_cpu_us_per_answer: Number(flood.serviceCpuMicrosecondsPerAnswer.toFixed(0)),
      database_cpu_us_per_answer: flood.databaseCpuMicrosecondsPerAnswer === null ? null : Number(flood.databaseCpuMicrosecondsPerAnswer.toFixed(0)),
      non_401_answers: flood.non401,
      flood_rate_beside_valid_client: flood.floodRate,
      valid_me_alone: flood.validAlone,
      valid_me_beside_flood: flood.validWithFlood,
      flood_beside_valid_client: flood.floodDuringValid,
      server_peak_rss_bytes: flood.serverPeakRssBytes,
    },
    server_peak_rss_bytes: serverPeakRssBytes,
    pg_ceiling: {
      insert_statements_per_second: Number(ceilings.insert.statementsPerSecond.toFixed(0)),
      new_lead_write_statements_per_second: Number(ceilings.leadWrite.statementsPerSecond.toFixed(0)),
      scenario_3_vs_insert_baseline_at_most: Number(ceilingBound.toFixed(2)),
    },
    targets,
    table,
  };
  // A smoke run's figures mean nothing: they go to the temporary directory, never over the
  // published ones.
  const file = smoke ? path.join(os.tmpdir(), 'lead-intake-bench-smoke.json') : path.join(ROOT, 'bench', 'results.json');
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  log(`results written to ${path.relative(ROOT, file).startsWith('..') ? file : path.relative(ROOT, file)}`);
}

main().catch((error: unknown) => {
  log(`crashed: ${error instanceof Error ? error.stack : String(error)}`);
  killAllChildren();
  process.exit(1);
});
