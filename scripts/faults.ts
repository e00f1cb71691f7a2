// `npm run faults`: a PostgreSQL outage under load, end to end (docs/operations.md).
//
// Starts its own PostgreSQL (embedded binaries, a temporary data directory, a free port,
// durable settings), a webhook receiver, the API (`node dist/src/main.js`, WORKER=off) and a
// separate worker (`node dist/src/worker-main.js`) as child processes, and steady traffic
// (scripts/faults/traffic.ts). Then it stops PostgreSQL (fast shutdown) for --outage seconds,
// starts it again, keeps the traffic going, drains the outbox and checks every requirement
// (scripts/faults/verify.ts). Two runs: `resume` (the worker rides the outage out) and
// `kill-worker` (the worker is SIGKILLed during the outage and a new one is started once the
// database is back). Prints the figures; exits 1 when any requirement fails.
//
//   npm run faults [-- --variant resume|kill-worker] [--outage 10] [--users 6] [--json file]

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPrivatePostgres, type PrivatePostgres } from '../test/support/private-postgres.js';
import { startReceiver, type Receiver } from '../test/support/receiver.js';
import { ROOT } from '../test/support/service.js';
import { drain, nextWebhook, Services, tenant } from './faults/services.js';
import { ReadinessProbe, Traffic } from './faults/traffic.js';
import { checkAnswers, checkDeliveries, checkIdempotency, checkLeads, checkLogs, printVerdicts, type Timeline, type Verdict } from './faults/verify.js';

const VARIANTS = ['resume', 'kill-worker'] as const;
type Variant = (typeof VARIANTS)[number];

const { values: args } = parseArgs({
  options: {
    variant: { type: 'string' },
    outage: { type: 'string', default: '10' },
    users: { type: 'string', default: '6' },
    before: { type: 'string', default: '5' },
    after: { type: 'string', default: '10' },
    json: { type: 'string' },
  },
});
const OUTAGE_MS = Number(args.outage) * 1000;
const BEFORE_MS = Number(args.before) * 1000;
const AFTER_MS = Number(args.after) * 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message: string) => process.stderr.write(`faults: ${message}\n`);

const services = new Services();

async function runVariant(variant: Variant, database: PrivatePostgres, receiver: Receiver): Promise<Verdict> {
  const verdict: Verdict = { figures: {}, failures: [] };
  const { workspaceId, token } = await tenant(database.url, receiver, variant);
  const { service: api, url: apiUrl } = await services.startApi(database.url);
  const workers = [await services.startWorker(database.url)];

  const traffic = new Traffic({ apiUrl, token }, Number(args.users), 50, variant);
  const readiness = new ReadinessProbe(apiUrl.replace(/\/api\/v1$/, ''), 250);
  traffic.start();
  readiness.start();
  await sleep(BEFORE_MS);

  const stopBegin = Date.now();
  await database.stop();
  const downAt = Date.now();
  log(`${variant}: PostgreSQL stopped (fast shutdown took ${downAt - stopBegin} ms); down for ${OUTAGE_MS / 1000} s`);
  if (variant === 'kill-worker') {
    await sleep(Math.min(3000, OUTAGE_MS / 3));
    await workers[0]!.stop('SIGKILL');
    log(`${variant}: worker SIGKILLed`);
  }
  await sleep(downAt + OUTAGE_MS - Date.now());
  const startBegin = Date.now();
  await database.start();
  const upAt = Date.now();
  const timeline: Timeline = { stopBegin, downAt, startBegin, upAt };
  const firstWebhookAfterUp = nextWebhook(receiver, variant);
  log(`${variant}: PostgreSQL up again (start took ${upAt - startBegin} ms)`);
  if (variant === 'kill-worker') {
    workers.push(await services.startWorker(database.url));
    log(`${variant}: a new worker started`);
  }
  await sleep(AFTER_MS);
  await traffic.stop();
  readiness.stop();

  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  try {
    const drainMs = await drain(db, workspaceId, receiver);
    verdict.figures['drain after the traffic stopped (s)'] = Number((drainMs / 1000).toFixed(1));
    const received = receiver.requests.filter((request) => request.path.startsWith(`/${variant}/`));
    const webhookAt = await firstWebhookAfterUp;
    if (webhookAt === null) verdict.failures.push('the worker delivered nothing after the database came back');
    else verdict.figures['database up -> first webhook received (s)'] = Number(((webhookAt - upAt) / 1000).toFixed(2));
    checkAnswers(traffic.ledger.answers, readiness.answers, timeline, verdict);
    const leads = await checkLeads(db, workspaceId, traffic.ledger, verdict);
    await checkIdempotency(db, traffic.ledger, verdict);
    await checkDeliveries(db, workspaceId, leads, received, verdict);
  } finally {
    await db.end();
  }

  // Nothing was restarted: the API (and, in `resume`, the worker) lived through the outage.
  const survivors = variant === 'resume' ? [api, ...workers] : [api, workers[1]!];
  for (const service of survivors) if (!service.alive()) verdict.failures.push(`a process exited: ${service.stderr.slice(-2000)}`);
  checkLogs('the API', api.logs, verdict);
  workers.forEach((worker, index) => checkLogs(index === 0 ? 'the worker' : 'the new worker', worker.logs, verdict));
  const exits = await Promise.all(survivors.map((service) => service.stop('SIGTERM')));
  if (exits.some((exit) => exit.code !== 0)) verdict.failures.push(`a process did not stop cleanly on SIGTERM: ${JSON.stringify(exits)}`);
  return verdict;
}

async function main(): Promise<number> {
  const variants = args.variant ? [args.variant as Variant] : [...VARIANTS];
  if (variants.some((variant) => !VARIANTS.includes(variant))) throw new Error(`--variant must be one of ${VARIANTS.join(', ')}`);
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-needed.mjs')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const started = Date.now();
  const database = await startPrivatePostgres('faults', { durable: true });
  const receiver = await startReceiver({ databaseUrl: database.url });
  const results: Record<string, Verdict> = {};
  try {
    for (const variant of variants) {
      log(`${variant}: starting`);
      results[variant] = await runVariant(variant, database, receiver);
    }
  } finally {
    await services.killAll();
    await receiver.close();
    await database.remove();
  }

  const passed = printVerdicts(results);
  process.stdout.write(`\nwhole run: ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  if (args.json) writeFileSync(args.json, `${JSON.stringify(results, null, 2)}\n`);
  return passed ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`faults: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
