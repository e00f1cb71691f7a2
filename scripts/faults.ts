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
import { runCli } from '../test/support/cli.js';
import { startPrivatePostgres, type PrivatePostgres } from '../test/support/private-postgres.js';
import { startReceiver, type Receiver } from '../test/support/receiver.js';
import { baseEnvironment, ROOT, startService, type ServiceProcess } from '../test/support/service.js';
import { ReadinessProbe, Traffic, VIP_TAG } from './faults/traffic.js';
import { checkAnswers, checkDeliveries, checkIdempotency, checkLeads, checkLogs, type Timeline, type Verdict } from './faults/verify.js';

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
const DRAIN_TIMEOUT_MS = 90_000;
/** A claim of the killed worker expires after 2 x WEBHOOK_TIMEOUT_MS + 5 s (9 s here); another worker then sends it. */
const WORKER_ENV = { OUTBOX_POLL_MS: '200', WEBHOOK_RETRY_BASE_MS: '500', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message: string) => process.stderr.write(`faults: ${message}\n`);

/** Every child process started, so a run that fails half-way leaves none behind. */
const children: ServiceProcess[] = [];

function startProcess(entry: 'main.js' | 'worker-main.js', databaseUrl: string, env: Record<string, string>): ServiceProcess {
  const child = startService(process.execPath, [path.join(ROOT, 'dist', 'src', entry)], {
    env: { ...baseEnvironment(), DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', ...env },
  });
  children.push(child);
  return child;
}

/** A workspace with a key, a lead_created workflow and a tag_added (VIP_TAG) workflow posting to the receiver. */
async function tenant(databaseUrl: string, receiver: Receiver, variant: Variant): Promise<{ workspaceId: number; token: string }> {
  const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' };
  const demo = await runCli(['demo'], env);
  if (demo.code !== 0) throw new Error(`cli demo failed: ${demo.stderr}`);
  const { workspace, key } = demo.json as { workspace: { id: number }; key: { token: string } };
  for (const trigger of [['--trigger', 'lead_created'], ['--trigger', 'tag_added', '--tag', VIP_TAG]]) {
    const workflow = await runCli(['workflow', 'create', '--workspace', String(workspace.id), ...trigger, '--url', `${receiver.url}/${variant}/${trigger[1]}`], env);
    if (workflow.code !== 0) throw new Error(`cli workflow create failed: ${workflow.stderr}`);
  }
  return { workspaceId: workspace.id, token: key.token };
}

/** When the receiver next gets a webhook of this run (polled every 20 ms, for up to a minute), or null. */
async function nextWebhook(receiver: Receiver, variant: Variant): Promise<number | null> {
  const seen = receiver.requests.length;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(20)) {
    if (receiver.requests.slice(seen).some((request) => request.path.startsWith(`/${variant}/`))) return Date.now();
  }
  return null;
}

/** Until every event of the workspace is fanned out, no delivery is pending and the receiver has every webhook-id. */
async function drain(db: pg.Client, workspaceId: number, receiver: Receiver): Promise<number> {
  const started = Date.now();
  for (;;) {
    const { rows } = await db.query<{ open: number; ids: string[] }>(`
      SELECT (SELECT count(*) FROM outbox WHERE workspace_id = $1 AND processed_at IS NULL AND topic IN ('lead.created', 'lead.tag_added'))::int
        + (SELECT count(*) FROM deliveries WHERE workspace_id = $1 AND branch = 'pending')::int AS open,
        (SELECT coalesce(array_agg(message_id), '{}') FROM deliveries WHERE workspace_id = $1) AS ids`, [workspaceId]);
    const received = new Set(receiver.requests.map((request) => String(request.headers['webhook-id'])));
    if (rows[0]!.open === 0 && rows[0]!.ids.every((id) => received.has(id))) return Date.now() - started;
    if (Date.now() - started > DRAIN_TIMEOUT_MS) return Date.now() - started;
    await sleep(250);
  }
}

async function runVariant(variant: Variant, database: PrivatePostgres, receiver: Receiver): Promise<Verdict> {
  const verdict: Verdict = { figures: {}, failures: [] };
  const { workspaceId, token } = await tenant(database.url, receiver, variant);
  const api = startProcess('main.js', database.url, { PORT: '0', HOST: '127.0.0.1', WORKER: 'off', RATE_LIMIT_PER_MINUTE: '100000000' });
  const workers = [startProcess('worker-main.js', database.url, WORKER_ENV)];
  const apiUrl = String((await api.waitForLog('Lead Intake API listening')).url);
  await workers[0]!.waitForLog('worker started');

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
    workers.push(startProcess('worker-main.js', database.url, WORKER_ENV));
    await workers[1]!.waitForLog('worker started');
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
    await Promise.all(children.map((child) => child.stop('SIGKILL')));
    await receiver.close();
    await database.remove();
  }

  for (const [variant, verdict] of Object.entries(results)) {
    process.stdout.write(`\n${variant}: ${verdict.failures.length === 0 ? 'PASS' : 'FAIL'}\n`);
    for (const [name, value] of Object.entries(verdict.figures)) process.stdout.write(`  ${name.padEnd(48)} ${value}\n`);
    for (const failure of verdict.failures.slice(0, 30)) process.stdout.write(`  FAILED: ${failure}\n`);
    if (verdict.failures.length > 30) process.stdout.write(`  ... and ${verdict.failures.length - 30} more failures\n`);
  }
  process.stdout.write(`\nwhole run: ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  if (args.json) writeFileSync(args.json, `${JSON.stringify(results, null, 2)}\n`);
  return Object.values(results).every((verdict) => verdict.failures.length === 0) ? 0 : 1;
}

main().then((code) => process.exit(code), (error: unknown) => {
  process.stderr.write(`faults: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
