// `npm run bench [-- --smoke] [--duration S] [--warmup S] [--connections N] [--only insert,new,...]`
//
// Starts the real service against the PostgreSQL and Redis it is given (DATABASE_URL names
// the server; a fresh database is created on it and dropped afterwards), seeds a workspace,
// and drives each scenario with autocannon from a separate process, next to two bare
// express baselines under the same load. Prints a table and writes bench/results.json.
// Targets are reported, not asserted: the exit code is non-zero only when something broke
// (a crash, errors, timeouts or non-2xx answers, lost deliveries, a delivery scenario that could
// not run), and a target measured on a broken scenario fails whatever its figure.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { runCsvScenario } from './bench/csv-import.js';
import { runDeliveryScenario } from './bench/delivery.js';
import { databaseUrl } from './database-url.js';
import { runFloodScenario } from './bench/flood.js';
import { DbAccounting } from './bench/db-accounting.js';
import { BENCH_APPLICATION_NAME, runMixedScenarios, type MixedOptions } from './bench/mixed.js';
import type { Workload } from './bench/load.js';
import { brokenBecause, citusCountsTable, mixedLines, report, type CeilingResult, type FixedRateResult, type ScenarioResult } from './bench/report.js';
import { groupSizesBetween, snapshotGroups } from './bench/group-sizes.js';
import { seedLeads, seedWorkspaces } from './bench/seed.js';
import { explainSearch, searchKinds } from './bench/search.js';
import { citusCluster, reportBesideSingleServer } from './bench/citus.js';
import { CitusCounters } from './bench/citus-counts.js';
import {
  adminQuery,
  benchServiceEnv,
  freePort,
  killAllChildren,
  nodeFlagsOf,
  ROOT,
  RssSampler,
  runCli,
  runLoad,
  runLoadMeasuringCpu,
  runOpenLoop,
  spawnChild,
  spawnTsx,
  stopChild,
  waitForHttp,
  waitForIdleDatabase,
} from './bench/support.js';

const { values: flags } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    'flood-rate': { type: 'string' },
    'reference-p50-at-20': { type: 'string' },
    only: { type: 'string' },
    citus: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    'mixed-duration': { type: 'string' },
    'db-accounting': { type: 'boolean', default: false },
  },
});
// `--only`: just these closed-loop scenarios, each beside the INSERT baseline (which always
// runs), for A/B runs of one change; no targets, no results file (see bench/README.md).
const ONLY_SCENARIOS = [
  'insert',
  'me',
  'read',
  'new',
  'existing',
  'new-100',
  'existing-100',
  'batch',
  'low-rate',
  'console',
  'delivery',
  'csv',
  'search',
  'mixed',
  'mixed-webhooks',
] as const;
type OnlyScenario = (typeof ONLY_SCENARIOS)[number];
const only =
  flags.only === undefined
    ? null
    : new Set(
        flags.only
          .split(',')
          .map((name) => name.trim())
          .filter(Boolean),
      );
for (const name of only ?? []) {
  if (!(ONLY_SCENARIOS as readonly string[]).includes(name)) throw new Error(`--only ${name}: not one of ${ONLY_SCENARIOS.join(', ')}`);
}
// Each seeds the demo workspace's people from the same first number.
const seeding = ['search', 'delivery', 'mixed-webhooks'].filter((name) => only?.has(name));
if (seeding.length > 1) throw new Error(`--only ${seeding.join(' and ')}: run them in calls of their own`);
const smoke = flags.smoke!;
const durationSeconds = Number(flags.duration ?? (smoke ? 1 : 15));
const warmupSeconds = Number(flags.warmup ?? (smoke ? 0 : 5));
const connections = Number(flags.connections ?? 32);
// The fixed rate of the flood beside the valid client in scenario 8 (see bench/README.md).
const floodRate = Number(flags['flood-rate'] ?? 500);
// The p50 of single POST /leads at 20 req/s measured on the build before (an A/B run of that
// build, see bench/README.md): the target compares this run's p50 with it.
const referenceLowRateP50 = flags['reference-p50-at-20'] === undefined ? null : Number(flags['reference-p50-at-20']);
// `--citus`: the same run on the Citus test cluster (scripts/bench/citus.ts), its ratios beside
// the single server's. Its large workspace is a tenth as large: seeding a million leads through
// the coordinator alone takes longer than the rest of the run.
const citus = flags.citus ? citusCluster() : null;
const largeWorkspaceLeads = smoke ? 1_000 : citus ? 100_000 : 1_000_000;
const deliveryEvents = smoke ? 200 : 10_000;
const INITIAL_LEADS = 1_000;
/** `--only search`: the fixed rate of each kind of search and of GET /leads/{id} beside them, low enough that no request waits for another. */
const SEARCH_RATE = 10;
// The mixed scenarios (issue 54): each mixed run this long, each of its parts alone a shorter run.
const mixedSeconds = Number(flags['mixed-duration'] ?? (smoke ? 2 : 60));
/**
 * The many-workspace scenarios: this many workspaces, one key each. Their seeded people are
 * as many in all as scenario 4's (10 each), so that as large a share of 4w's updates is a
 * person's first (its job title changed, its company created from the email's domain) as of
 * scenario 4's, whose later updates of the same people change nothing.
 */
const WORKSPACES = 100;
const LEADS_PER_WORKSPACE = INITIAL_LEADS / WORKSPACES;

const adminUrl = citus?.url ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const benchDatabase = `lead_intake_bench_${Date.now()}`;
const benchUrl = databaseUrl(adminUrl, benchDatabase);
const runId = Date.now().toString(36);

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

let idlePool: pg.Pool | null = null;
/** `--citus`: the cluster's counts around each scenario (scripts/bench/citus-counts.ts). */
let citusCounters: CitusCounters | null = null;
/** The service's GET /metrics, to read how many requests each write group held. */
let serviceMetricsUrl: string | null = null;
let postgresVersion = 'unknown';
const loadAtStart = os.loadavg().map((load) => Number(load.toFixed(2)));

/** A console session cookie for the user: a sign-in link minted by the CLI, redeemed as the sign-in page posts it. */
async function consoleSession(base: string, userId: number): Promise<string> {
  const { url } = (await runCli(['console', 'link', '--user', String(userId)], { DATABASE_URL: benchUrl, LOG_LEVEL: 'warn' })) as { url: string };
  const answer = await fetch(`${base}/console/sign-in/link`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: new URL(url).hash.slice(1) }),
  });
  const cookie = answer.headers.get('set-cookie')?.split(';')[0];
  if (answer.status !== 303 || !cookie) throw new Error(`console sign-in answered ${answer.status}`);
  return cookie;
}

async function measure(name: string, url: string, token: string | null, workload: Workload, rssPid: number | null): Promise<ScenarioResult> {
  // A 100-lead batch takes longer than a one-second smoke window at this concurrency.
  const duration = workload.kind === 'new-batch' ? Math.max(durationSeconds, 3) : durationSeconds;
  log(`${name}: ${warmupSeconds}s warm-up + ${duration}s at ${connections} connections`);
  const rss = new RssSampler(() => (rssPid ? [rssPid] : [])).start();
  const metricsUrl = token ? serviceMetricsUrl : null;
  const groupsBefore = metricsUrl ? await snapshotGroups(metricsUrl) : null;
  const countsBefore = await citusCounters?.snapshot();
  const { result, cpuMicrosecondsPerAnswer: serverCpuMicrosecondsPerAnswer } = await runLoadMeasuringCpu(
    { url, token, connections, warmupSeconds, durationSeconds: duration, workload },
    rssPid,
  );
  const serverPeakRssBytes = rss.stop();
  // Requests still in flight when the load stopped finish before the next scenario starts.
  if (idlePool) await waitForIdleDatabase(idlePool);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const groupSizes = metricsUrl && groupsBefore ? groupSizesBetween(groupsBefore, await snapshotGroups(metricsUrl)) : undefined;
  const citusCounts = countsBefore && citusCounters ? await citusCounters.between(countsBefore, await citusCounters.snapshot(), result.answersIncludingWarmup) : undefined;
  return { name, ...result, serverPeakRssBytes, serverCpuMicrosecondsPerAnswer, groupSizes, citusCounts };
}

/**
 * The scenario again at a fixed rate of half its measured maximum (open model, see
 * bench/open-loop.ts): the latency a client sees under normal load.
 */
async function atHalfRate(scenario: ScenarioResult, url: string, token: string | null, workload: Workload, rssPid: number): Promise<FixedRateResult> {
  return atFixedRate(scenario.name, Math.max(1, Math.round(scenario.requestsPerSecond / 2)), url, token, workload, rssPid);
}

async function atFixedRate(name: string, rate: number, url: string, token: string | null, workload: Workload, rssPid: number): Promise<FixedRateResult> {
  log(`${name} at a fixed ${rate} req/s: ${warmupSeconds}s warm-up + ${durationSeconds}s`);
  const rss = new RssSampler(() => [rssPid]).start();
  const groupsBefore = serviceMetricsUrl ? await snapshotGroups(serviceMetricsUrl) : null;
  const countsBefore = await citusCounters?.snapshot();
  const result = await runOpenLoop({ url, token, rate, warmupSeconds, durationSeconds, workload });
  const serverPeakRssBytes = rss.stop();
  if (idlePool) await waitForIdleDatabase(idlePool);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const groupSizes = serviceMetricsUrl && groupsBefore ? groupSizesBetween(groupsBefore, await snapshotGroups(serviceMetricsUrl)) : undefined;
  // An open loop sends every request due at its rate, the warm-up's included.
  const citusCounts =
    countsBefore && citusCounters ? await citusCounters.between(countsBefore, await citusCounters.snapshot(), Math.round(rate * (warmupSeconds + durationSeconds))) : undefined;
  return { name, ...result, serverPeakRssBytes, groupSizes, citusCounts };
}

/** The PostgreSQL-only ceiling of a statement (see bench/pg-ceiling.ts), in its own process. */
async function ceiling(mode: 'insert' | 'lead-write', workspaceId: number): Promise<CeilingResult> {
  log(`ceiling ${mode}: ${Math.min(warmupSeconds, 2)}s warm-up + ${durationSeconds}s at ${connections} callers`);
  const child = spawnTsx(
    'scripts/bench/pg-ceiling.ts',
    [
      JSON.stringify({
        databaseUrl: benchUrl,
        mode,
        workspaceId,
        concurrency: connections,
        poolSize: 10,
        warmupSeconds: Math.min(warmupSeconds, 2),
        durationSeconds,
      }),
    ],
    {},
    { stdout: 'pipe' },
  );
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`pg-ceiling ${mode} failed with exit code ${code}`);
  return JSON.parse(stdout) as CeilingResult;
}

async function withBaseline<T>(mode: 'constant' | 'insert' | 'read' | 'same-work', workspaceId: number, work: (url: string, pid: number) => Promise<T>): Promise<T> {
  const port = await freePort();
  const child = spawnTsx('scripts/bench/baseline.ts', [mode], { PORT: String(port), DATABASE_URL: benchUrl, WORKSPACE_ID: String(workspaceId) });
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
  if (citus) citus.createDatabase(benchDatabase);
  else await adminQuery(adminUrl, `CREATE DATABASE "${benchDatabase}"`);
  // Before the service's first session: the counters' settings apply to sessions opened after.
  if (citus) citusCounters = await CitusCounters.open(adminUrl, benchDatabase);
  const pool = new pg.Pool({ connectionString: benchUrl, max: 2, application_name: BENCH_APPLICATION_NAME });
  idlePool = pool;
  const port = await freePort();
  const metricsPort = await freePort();
  serviceMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  // `--cpu-prof DIR`: the service (and the CSV scenario's worker) writes a V8 CPU profile of its whole life into DIR (node's --cpu-prof).
  const profileFlags = flags['cpu-prof'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${path.resolve(flags['cpu-prof'])}`];
  const service = spawnChild([...nodeFlagsOf('start'), ...profileFlags, path.join(ROOT, 'dist', 'src', 'main.js')], {
    ...benchServiceEnv(benchUrl, redisUrl, port),
    WORKER: 'off',
    METRICS_PORT: String(metricsPort),
    // OpenTelemetry's variables reach the service as they are (tracing on when they ask for it).
    ...Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith('OTEL_') && entry[1] !== undefined)),
  });
  const serviceRss = new RssSampler(() => [service.pid!]).start();
  const cleanup = async () => {
    await stopChild(service);
    await pool.end().catch(() => {});
    await citusCounters?.close();
    if (citus) citus.dropDatabase(benchDatabase);
    else await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${benchDatabase}" WITH (FORCE)`).catch(() => {});
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

    // Every new person refers to one of 500 company domains and 11 tags: these exist before
    // any scenario, so the same-work baseline and scenario 3 do the same work from the start.
    log('priming the workspace: 500 new people through the service (companies and tags)');
    const primed = await runOpenLoop({
      url: base,
      token,
      rate: 250,
      warmupSeconds: 0,
      durationSeconds: 2,
      workload: { kind: 'new-lead', runId: `${runId}p`, phoneBase: 1_000_000_000 },
    });
    if (primed.errors + primed.non2xx > 0) throw new Error(`priming failed: ${primed.errors} errors, ${primed.non2xx} non-2xx`);
    const readWorkload: Workload = { kind: 'get-random-lead', ids: { from: seeded.firstId, to: seeded.lastId } };

    // The many-workspace scenarios' workspaces, keys, companies, tags and people, set-based.
    const many = await seedWorkspaces(benchUrl, WORKSPACES, workspaceId);
    const manyTokens = many.map((workspace) => workspace.token);
    const manySeeded = await seedLeads(
      benchUrl,
      many.map((workspace) => workspace.workspaceId),
      1,
      LEADS_PER_WORKSPACE,
    );
    log(`seeded ${WORKSPACES} workspaces with a key and ${LEADS_PER_WORKSPACE} people each in ${(manySeeded.insertSeconds + manySeeded.vacuumSeconds).toFixed(1)} s`);
    const manyNew: Workload = { kind: 'new-lead', runId: `${runId}w`, phoneBase: 5_000_000_000, tokens: manyTokens };
    const manyExisting: Workload = { kind: 'existing-lead', seeded: LEADS_PER_WORKSPACE, tokens: manyTokens };
    const manyNewName = `3w POST /leads new person, ${WORKSPACES} workspaces`;
    const manyExistingName = `4w POST /leads existing person, ${WORKSPACES} workspaces`;

    // Scenario 1 and its baseline, measured the same way by the full run and by `--only me`.
    const meWorkload: Workload = { kind: 'get', path: '/api/v1/me' };
    const measureConstant = () =>
      withBaseline('constant', workspaceId, (url, baselinePid) => measure('baseline: express constant JSON', url, null, { kind: 'get', path: '/me' }, baselinePid));
    const measureMe = () => measure('1 GET /me', base, token, meWorkload, pid);
    // The mixed scenarios, on a service of their own started as `npm start` starts it (worker in process).
    const accounting = flags['db-accounting'] ? await DbAccounting.open(pool) : null;
    const mixedOptions = (runs: MixedOptions['runs'], deliveryScenarioPerSecond: number | null, partSeconds: number): MixedOptions => ({
      pool,
      databaseUrl: benchUrl,
      redisUrl,
      workspaceId,
      token,
      seeded,
      existing: INITIAL_LEADS,
      runId,
      connections,
      warmupSeconds: smoke ? 0 : Math.min(warmupSeconds, 3),
      partSeconds,
      mixedSeconds,
      drainTimeoutSeconds: smoke ? 60 : 180,
      burstEvents: smoke ? 200 : 5_000,
      profileFlags,
      deliveryScenarioPerSecond,
      runs,
      accounting,
      log,
    });

    if (only) {
      const wanted = (name: OnlyScenario) => only.has(name);
      let meVsConstant: number | null = null;
      const insert = await withBaseline('insert', workspaceId, (url, baselinePid) => measure('baseline: express + pg INSERT', url, null, { kind: 'baseline-insert' }, baselinePid));
      const picked: ScenarioResult[] = [insert];
      // GET /me beside its own baseline, the constant JSON, measured just before it.
      if (wanted('me')) {
        const constant = await measureConstant();
        const me = await measureMe();
        picked.push(constant, me);
        meVsConstant = me.requestsPerSecond / Math.max(constant.requestsPerSecond, 1e-9);
      }
      if (wanted('read')) picked.push(await measure('2 GET /leads/{id}', base, token, readWorkload, pid));
      if (wanted('new')) picked.push(await measure('3 POST /leads new person', base, token, { kind: 'new-lead', runId: `${runId}a`, phoneBase: 2_000_000_000 }, pid));
      if (wanted('existing')) picked.push(await measure('4 POST /leads existing person', base, token, { kind: 'existing-lead', seeded: INITIAL_LEADS }, pid));
      if (wanted('new-100')) picked.push(await measure(manyNewName, base, token, manyNew, pid));
      if (wanted('existing-100')) picked.push(await measure(manyExistingName, base, token, manyExisting, pid));
      if (wanted('batch'))
        picked.push(await measure('5 POST /leads/batch 100 new', base, token, { kind: 'new-batch', runId: `${runId}b`, phoneBase: 3_000_000_000, size: 100 }, pid));
      if (wanted('console')) {
        const cookie = await consoleSession(base, demo.user.id as number);
        picked.push(await measure(`6b GET /console/leads, ${INITIAL_LEADS} leads`, base, null, { kind: 'console-lead-list', cookie }, pid));
        picked.push(await measure('6c GET /console/leads/{id}', base, null, { kind: 'console-lead-page', cookie, ids: { from: seeded.firstId, to: seeded.lastId } }, pid));
      }
      const lowRate = wanted('low-rate')
        ? await atFixedRate('3 POST /leads new person, 20 req/s', 20, base, token, { kind: 'new-lead', runId: `${runId}l`, phoneBase: 8_000_000_000 }, pid)
        : null;
      // The CSV scenario: a 50,000-row file imported through the console and a worker, then exported (bench/README.md).
      const csv = wanted('csv')
        ? await runCsvScenario({
            base,
            cookie: await consoleSession(base, demo.user.id as number),
            databaseUrl: benchUrl,
            pool,
            servicePid: pid,
            rows: smoke ? 2_000 : 50_000,
            runId,
            profileFlags,
          })
        : null;
      // The Leads page's search on the large workspace, beside GET /leads/{id}, both at a fixed rate (bench/README.md).
      const searches: FixedRateResult[] = [];
      const plans: string[] = [];
      if (wanted('search')) {
        log(`seeding ${largeWorkspaceLeads.toLocaleString('en')} more leads`);
        const large = await seedLeads(benchUrl, workspaceId, INITIAL_LEADS + 1, INITIAL_LEADS + largeWorkspaceLeads);
        const leadCount = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM leads WHERE workspace_id = $1', [workspaceId])).rows[0]!.n);
        log(`seeded in ${large.insertSeconds.toFixed(1)} s (+ ${large.vacuumSeconds.toFixed(1)} s VACUUM ANALYZE); the workspace holds ${leadCount.toLocaleString('en')} leads`);
        const cookie = await consoleSession(base, demo.user.id as number);
        searches.push(await atFixedRate('2 GET /leads/{id}', SEARCH_RATE, base, token, { kind: 'get-random-lead', ids: { from: large.firstId, to: large.lastId } }, pid));
        for (const kind of searchKinds(1, INITIAL_LEADS + largeWorkspaceLeads)) {
          searches.push(await atFixedRate(`search: ${kind.name}`, SEARCH_RATE, base, null, { kind: 'console-lead-search', cookie, terms: kind.terms }, pid));
          plans.push(`plan of search "${kind.terms[0]}":\n${await explainSearch(pool, workspaceId, kind.terms[0]!)}`);
        }
      }
      // The mixed scenarios; with webhooks, the delivery scenario first (its rate is what the drain is compared with).
      const mixedRuns = { plain: wanted('mixed'), webhooks: wanted('mixed-webhooks') };
      let mixed = null;
      if (mixedRuns.plain || mixedRuns.webhooks) {
        let reference: number | null = null;
        if (mixedRuns.webhooks) {
          await seedLeads(benchUrl, workspaceId, INITIAL_LEADS + 1, INITIAL_LEADS + deliveryEvents);
          const delivery = await measureDelivery(pool, workspaceId);
          process.stdout.write(
            `7 delivery: ${delivery.skipped ? `skipped: ${delivery.skipped}` : `${delivery.deliveriesPerSecond.toFixed(0)} deliveries/s, ${delivery.lost} lost, ${delivery.duplicates} duplicates`}\n`,
          );
          reference = delivery.skipped ? null : delivery.deliveriesPerSecond;
        }
        mixed = await runMixedScenarios(mixedOptions(mixedRuns, reference, durationSeconds));
        picked.push(...Object.values(mixed.parts), ...[mixed.mixed, mixed.webhooks].filter((run) => run !== null));
      }
      // Scenario 7 as the full run has it: enough leads for its events, the scenarios' own events set aside.
      let delivery: Awaited<ReturnType<typeof measureDelivery>> | null = null;
      if (wanted('delivery')) {
        if (deliveryEvents > INITIAL_LEADS) await seedLeads(benchUrl, workspaceId, INITIAL_LEADS + 1, deliveryEvents);
        delivery = await measureDelivery(pool, workspaceId);
      }
      serviceRss.stop();
      reportOnly(picked, insert);
      if (mixed) process.stdout.write(`\n${mixedLines(mixed)}`);
      if (delivery && !delivery.skipped)
        process.stdout.write(
          `7 delivery: ${delivery.deliveriesPerSecond.toFixed(0)} deliveries/s (${delivery.events} events, ${delivery.workers} workers), ${delivery.duplicates} duplicates, ${delivery.lost} lost, worker CPU ${delivery.workerCpuMicrosecondsPerDelivery.toFixed(0)} us per delivery\n`,
        );
      const countsTable = citusCountsTable([...picked, ...(lowRate ? [lowRate] : [])], delivery ?? undefined);
      if (countsTable) process.stdout.write(`\n${countsTable}\n`);
      if (csv) {
        const batch = picked.find((scenario) => scenario.name.startsWith('5 '));
        const batchLeads = batch ? batch.requestsPerSecond * 100 : null;
        const versus = (leadsPerSecond: number) => (batchLeads ? `, ${(leadsPerSecond / batchLeads).toFixed(2)}x the batch scenario's ${batchLeads.toFixed(0)} leads/s` : '');
        process.stdout.write(
          `CSV import of ${csv.rows} rows: ${csv.importSeconds.toFixed(1)} s, ${csv.importLeadsPerSecond.toFixed(0)} leads/s${versus(csv.importLeadsPerSecond)}, worker peak RSS ${(csv.workerPeakRssBytes / 1024 ** 2).toFixed(0)} MB\n` +
            `CSV export of ${csv.exportRows} leads: ${csv.exportSeconds.toFixed(1)} s, ${csv.exportLeadsPerSecond.toFixed(0)} leads/s${versus(csv.exportLeadsPerSecond)}, service peak RSS ${(csv.servicePeakRssBytes / 1024 ** 2).toFixed(0)} MB\n`,
        );
      }
      for (const search of searches) process.stdout.write(`${search.name} at ${search.rate} req/s: p50 ${search.p50} ms, p99 ${search.p99} ms\n`);
      if (plans.length > 0) process.stdout.write(`${plans.join('\n')}\n`);
      if (meVsConstant !== null) process.stdout.write(`1 GET /me: ${meVsConstant.toFixed(2)}x the constant JSON\n`);
      if (lowRate) process.stdout.write(`${lowRate.name}: p50 ${lowRate.p50} ms, p99 ${lowRate.p99} ms\n`);
      const broken = [...picked, ...(lowRate ? [lowRate] : []), ...searches].map(brokenBecause).filter((reason) => reason !== null);
      if (delivery?.skipped) broken.push(`7 delivery skipped: ${delivery.skipped}`);
      else if (delivery && (delivery.lost || delivery.duplicates)) broken.push(`delivery: ${delivery.lost} lost, ${delivery.duplicates} duplicates`);
      if (broken.length > 0) {
        log(`FAILED: ${broken.join('; ')}`);
        process.exitCode = 1;
      }
      return;
    }

    const constant = await measureConstant();
    const insert = await withBaseline('insert', workspaceId, (url, baselinePid) => measure('baseline: express + pg INSERT', url, null, { kind: 'baseline-insert' }, baselinePid));
    const readBaseline = await withBaseline('read', workspaceId, (url, baselinePid) => measure('baseline: express + pg primary-key SELECT', url, null, readWorkload, baselinePid));
    const sameWork = await withBaseline('same-work', workspaceId, (url, baselinePid) =>
      measure('baseline: express + the new-lead statements', url, null, { kind: 'new-lead', runId: `${runId}s`, phoneBase: 6_000_000_000 }, baselinePid),
    );
    const insertCeiling = await ceiling('insert', workspaceId);

    const me = await measureMe();
    // Here, while the database is quiet: before the intake scenarios give autovacuum work.
    const flood = await runFloodScenario({
      url: base,
      token,
      benchUrl,
      connections,
      warmupSeconds,
      durationSeconds,
      floodRate,
      serverPid: pid,
      waitForCounters: !smoke,
      log,
    });
    const read = await measure('2 GET /leads/{id}', base, token, readWorkload, pid);
    const created = await measure('3 POST /leads new person', base, token, { kind: 'new-lead', runId: `${runId}a`, phoneBase: 2_000_000_000 }, pid);
    const fixedRate = [
      await atHalfRate(me, base, token, meWorkload, pid),
      await atHalfRate(read, base, token, readWorkload, pid),
      await atHalfRate(created, base, token, { kind: 'new-lead', runId: `${runId}f`, phoneBase: 7_000_000_000 }, pid),
    ];
    // Nothing to coalesce: one request at a time, so every group holds one.
    const lowRate = await atFixedRate('3 POST /leads new person, 20 req/s', 20, base, token, { kind: 'new-lead', runId: `${runId}l`, phoneBase: 8_000_000_000 }, pid);
    const updated = await measure('4 POST /leads existing person', base, token, { kind: 'existing-lead', seeded: INITIAL_LEADS }, pid);
    const batch = await measure('5 POST /leads/batch 100 new', base, token, { kind: 'new-batch', runId: `${runId}b`, phoneBase: 3_000_000_000, size: 100 }, pid);
    batch.leadsPerSecond = batch.requestsPerSecond * 100;
    // Many workspaces each sending a little, over the same connections: requests take the
    // workspaces' keys in turn.
    const manyCreated = await measure(manyNewName, base, token, manyNew, pid);
    const manyUpdated = await measure(manyExistingName, base, token, manyExisting, pid);
    const leadWriteCeiling = await ceiling('lead-write', workspaceId);
    await waitForIdleDatabase(pool);

    log(`seeding ${largeWorkspaceLeads.toLocaleString('en')} more leads`);
    const { insertSeconds: seedSeconds, vacuumSeconds } = await seedLeads(benchUrl, workspaceId, INITIAL_LEADS + 1, INITIAL_LEADS + largeWorkspaceLeads);
    const leadCount = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM leads WHERE workspace_id = $1', [workspaceId])).rows[0]!.n);
    log(`seeded in ${seedSeconds.toFixed(1)} s (+ ${vacuumSeconds.toFixed(1)} s VACUUM ANALYZE); the workspace holds ${leadCount.toLocaleString('en')} leads`);
    const large = await measure(
      `6 POST /leads new person, ${leadCount.toLocaleString('en')} leads`,
      base,
      token,
      { kind: 'new-lead', runId: `${runId}c`, phoneBase: 4_000_000_000 },
      pid,
    );
    // The console's pages on the same large workspace, signed in as the demo admin (a sign-in link redeemed once).
    const cookie = await consoleSession(base, demo.user.id as number);
    const consoleList = await measure(`6b GET /console/leads, ${leadCount.toLocaleString('en')} leads`, base, null, { kind: 'console-lead-list', cookie }, pid);
    const consoleLead = await measure('6c GET /console/leads/{id}', base, null, { kind: 'console-lead-page', cookie, ids: { from: seeded.firstId, to: seeded.lastId } }, pid);

    const serverPeakRssBytes = serviceRss.stop();
    await stopChild(service);

    const delivery = await measureDelivery(pool, workspaceId);
    if (delivery.skipped) process.stdout.write(`7 delivery: skipped: ${delivery.skipped}\n`);
    const mixed = await runMixedScenarios(
      mixedOptions({ plain: true, webhooks: true }, delivery.skipped ? null : delivery.deliveriesPerSecond, smoke ? 1 : Math.min(durationSeconds, 10)),
    );

    const scenarios = [constant, insert, readBaseline, sameWork, me, read, created, updated, manyCreated, manyUpdated, batch, large, consoleList, consoleLead];
    const extra = {
      date: new Date().toISOString(),
      mode: smoke ? 'smoke' : 'full',
      options: {
        durationSeconds,
        warmupSeconds,
        connections,
        largeWorkspaceLeads: leadCount,
        deliveryEvents,
        seedSeconds: Number(seedSeconds.toFixed(1)),
        vacuumSeconds: Number(vacuumSeconds.toFixed(1)),
      },
      machine: machine(),
    };
    // A smoke run's figures mean nothing: they go to the temporary directory, never over the
    // published ones.
    const file = smoke ? path.join(os.tmpdir(), 'lead-intake-bench-smoke.json') : path.join(ROOT, 'bench', citus ? 'results-citus.json' : 'results.json');
    report(
      {
        connections,
        scenarios,
        named: { constant, insert, readBaseline, sameWork, me, read, created, updated, manyCreated, manyUpdated, batch, large },
        fixedRate,
        lowRate,
        referenceLowRateP50,
        delivery,
        flood,
        serverPeakRssBytes,
        ceilings: { insert: insertCeiling, leadWrite: leadWriteCeiling },
        mixed,
      },
      extra,
      file,
    );
    log(`results written to ${path.relative(ROOT, file).startsWith('..') ? file : path.relative(ROOT, file)}`);
    if (citus && !smoke) reportBesideSingleServer(file, path.join(ROOT, 'bench', 'results.json'));
    const mixedRuns = [...Object.values(mixed.parts), ...[mixed.mixed, mixed.webhooks].filter((run) => run !== null)];
    const broken = [...scenarios, ...mixedRuns, { ...flood.validAlone, name: '8 valid GET /me alone' }, { ...flood.validWithFlood, name: '8 valid GET /me beside the flood' }]
      .map(brokenBecause)
      .filter((reason) => reason !== null);
    for (const fixed of [...fixedRate, lowRate]) {
      const reason = brokenBecause({ ...fixed, name: `${fixed.name} at a fixed rate` });
      if (reason) broken.push(`${reason} ${JSON.stringify(fixed.errorReasons)}`);
    }
    const floodBroken = flood.non401 > 0 || [flood.flood, flood.floodDuringValid].some((run) => run.errors > 0 || run.timeouts > 0 || run.requests === 0);
    if (floodBroken)
      broken.push(
        `8 invalid-key flood: ${flood.non401} answers other than 401 (${JSON.stringify([flood.flood.statusCounts, flood.floodDuringValid.statusCounts])}), ${flood.flood.errors + flood.floodDuringValid.errors} errors, ${flood.flood.timeouts + flood.floodDuringValid.timeouts} timeouts`,
      );
    if (delivery.lost || delivery.duplicates) broken.push(`delivery: ${delivery.lost} lost, ${delivery.duplicates} duplicates`);
    // Every scenario must run: a skipped one is a failure (the smoke run in CI relies on it).
    if (delivery.skipped) broken.push(`7 delivery skipped: ${delivery.skipped}`);
    if (broken.length > 0) {
      log(`FAILED: ${broken.join('; ')}`);
      process.exitCode = 1;
    }
  } finally {
    await cleanup();
  }
}

/** Scenario 7, with the cluster's counts per delivery on `--citus`. */
async function measureDelivery(pool: pg.Pool, workspaceId: number) {
  // The intake scenarios queued events of their own (WORKER=off left them): set them aside
  // so the delivery scenario measures exactly its own events.
  await pool.query('UPDATE outbox SET processed_at = now() WHERE processed_at IS NULL');
  log(`7 delivery: ${deliveryEvents} events, 2 workers`);
  const countsBefore = await citusCounters?.snapshot();
  const delivery = await runDeliveryScenario({ pool, databaseUrl: benchUrl, workspaceId, events: deliveryEvents, workers: 2, timeoutMs: 120_000 });
  if (countsBefore && citusCounters && !delivery.skipped) delivery.citusCounts = await citusCounters.between(countsBefore, await citusCounters.snapshot(), delivery.delivered);
  return delivery;
}

/** `--only`: each scenario's req/s, p50, p99, server CPU per answer, peak RSS, write groups and ratio to the INSERT baseline of the same run. */
function reportOnly(scenarios: ScenarioResult[], insert: ScenarioResult): void {
  const lines = scenarios.map((scenario) => {
    const ratio = scenario.requestsPerSecond / Math.max(insert.requestsPerSecond, 1e-9);
    const groups =
      scenario.groupSizes && scenario.groupSizes.groups > 0
        ? `; ${scenario.groupSizes.groups} groups, mean ${(scenario.groupSizes.requests / scenario.groupSizes.groups).toFixed(1)}, of one request ${scenario.groupSizes.buckets['1'] ?? 0}`
        : '';
    const cpu = scenario.serverCpuMicrosecondsPerAnswer == null ? '' : `, server CPU ${scenario.serverCpuMicrosecondsPerAnswer.toFixed(0)} us/answer`;
    const rss = scenario.serverPeakRssBytes > 0 ? `, peak RSS ${(scenario.serverPeakRssBytes / 1024 ** 2).toFixed(0)} MB` : '';
    return `${scenario.name}: ${scenario.requestsPerSecond.toFixed(0)} req/s, p50 ${scenario.p50} ms, p99 ${scenario.p99} ms, ${ratio.toFixed(2)}x INSERT${cpu}${rss}${groups}`;
  });
  process.stdout.write(`\n${lines.join('\n')}\n`);
}

function machine() {
  return {
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
    worker_node_flags: nodeFlagsOf('worker'),
  };
}

main().catch((error: unknown) => {
  log(`crashed: ${error instanceof Error ? error.stack : String(error)}`);
  killAllChildren();
  process.exit(1);
});
