// `npm run failover`: a PostgreSQL failover under load, end to end (docs/operations.md,
// "Running on a high-availability PostgreSQL").
//
// Installs the Debian packages it lacks (patroni, etcd-server, haproxy; as root), starts its
// own cluster (scripts/failover/cluster.ts: etcd, two PostgreSQL 15 nodes under Patroni in
// synchronous mode, HAProxy routing to the leader), a webhook receiver, two API processes
// and two workers of the built service through HAProxy, and the fault test's traffic
// (scripts/faults/traffic.ts) against both APIs. Two events, each with its own workspace
// and traffic, checked like the fault test (scripts/faults/verify.ts) plus exactly-once
// delivery and no worker left paused:
//   failover    SIGKILL to the leader's postmaster; Patroni promotes the synchronous standby;
//   switchover  `patronictl switchover` back to the first leader once it rejoined as standby.
// Prints the figures; exits 1 when any requirement fails. Everything is torn down at the
// end, on failure and on Ctrl-C.
//
//   npm run failover [-- --users 3] [--before 5] [--after 10] [--json file]

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startReceiver, type Receiver } from '../test/support/receiver.js';
import { baseEnvironment, ROOT, runToEnd, type LogLine, type ServiceProcess } from '../test/support/service.js';
import { installPackages, startCluster, waitFor, type HaCluster, type NodeConfig } from './failover/cluster.js';
import { drain, nextWebhook, Services, tenant } from './faults/services.js';
import { ReadinessProbe, Traffic, type Answer, type Ledger } from './faults/traffic.js';
import { checkAnswers, checkDeliveries, checkIdempotency, checkLeads, printVerdicts, type Timeline, type Verdict } from './faults/verify.js';

const EVENTS = ['failover', 'switchover'] as const;
type Event = (typeof EVENTS)[number];

const { values: args } = parseArgs({
  options: {
    users: { type: 'string', default: '3' },
    before: { type: 'string', default: '5' },
    after: { type: 'string', default: '10' },
    json: { type: 'string' },
  },
});
const USERS_PER_API = Number(args.users);
const BEFORE_MS = Number(args.before) * 1000;
const AFTER_MS = Number(args.after) * 1000;
const READINESS_EVERY_MS = 50;
/** Longest wait for a writable primary after the kill or the switchover. */
const NEW_PRIMARY_TIMEOUT_MS = 60_000;
/** Longest wait for a leader with its synchronous standby (the old leader rejoining included). */
const HEALTHY_TIMEOUT_MS = 120_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message: string) => process.stderr.write(`failover: ${message}\n`);
const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

interface Probe {
  startedAt: number;
  endedAt: number;
  writable: boolean;
  error?: string;
}

/**
 * Every 100 ms a new connection to each node (not through HAProxy, which may still send some
 * connections to a dead node for a moment) asking whether it is a primary: when the cluster
 * had no writable primary, independently of the API.
 */
class PrimaryProbe {
  readonly probes: Probe[] = [];
  private running = true;
  private loop: Promise<void> = Promise.resolve();

  constructor(private readonly nodes: NodeConfig[]) {}

  start(): void {
    this.loop = (async () => {
      while (this.running) {
        const startedAt = Date.now();
        const answers = await Promise.all(this.nodes.map((node) => isPrimary(node)));
        const writable = answers.includes(true);
        this.probes.push({ startedAt, endedAt: Date.now(), writable, error: writable ? undefined : answers.join('; ') });
        await sleep(100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** The cluster's outage after `since`: the first failed probe, the last failed one before the first success after it, and that success. */
  outage(since: number): { firstFailure: Probe; lastFailure: Probe; recovery: Probe } | null {
    const after = this.probes.filter((probe) => probe.startedAt >= since);
    const first = after.findIndex((probe) => !probe.writable);
    if (first < 0) return null;
    const recovered = after.findIndex((probe, index) => index > first && probe.writable);
    if (recovered < 0) return null;
    return { firstFailure: after[first]!, lastFailure: after[recovered - 1]!, recovery: after[recovered]! };
  }
}

/** true, or why not. */
async function isPrimary(node: NodeConfig): Promise<true | string> {
  const client = new pg.Client({ host: '127.0.0.1', port: node.pgPort, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 1000, query_timeout: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery')).rows[0]!.recovery ? `${node.name} in recovery` : true;
  } catch (error) {
    return `${node.name}: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await client.end().catch(() => {});
  }
}

const merged = (ledgers: Ledger[]): Ledger => ({
  answers: ledgers.flatMap((ledger) => ledger.answers),
  people: new Map(ledgers.flatMap((ledger) => [...ledger.people])),
  idempotent: ledgers.flatMap((ledger) => ledger.idempotent),
});

/** No worker stuck: each still runs, and one that paused during the event resumed after it. */
function checkWorkers(workers: ServiceProcess[], since: number, verdict: Verdict): void {
  const states = workers.map((worker, index) => {
    const time = (line: LogLine) => Number(line.time ?? 0);
    const paused = worker.logs.filter((line) => time(line) >= since && String(line.msg).startsWith('worker paused'));
    const resumed = worker.logs.filter((line) => time(line) >= since && String(line.msg).startsWith('worker resumed'));
    const lastPause = Math.max(0, ...paused.map(time));
    const stuck = !worker.alive() || (paused.length > 0 && !resumed.some((line) => time(line) >= lastPause));
    if (!worker.alive()) verdict.failures.push(`worker ${index + 1} exited: ${worker.stderr.slice(-2000)}`);
    else if (stuck) verdict.failures.push(`worker ${index + 1} paused during the event and never resumed`);
    return `worker ${index + 1}: ${paused.length > 0 ? `paused and resumed after ${seconds(Math.max(...resumed.map(time)) - lastPause)} s` : 'never paused'}${stuck ? ' (STUCK)' : ''}`;
  });
  verdict.figures['workers'] = states.join('; ');
}

interface Running {
  cluster: HaCluster;
  receiver: Receiver;
  apis: Array<{ service: ServiceProcess; url: string }>;
  workers: ServiceProcess[];
}

async function runEvent(event: Event, { cluster, receiver, apis, workers }: Running): Promise<Verdict> {
  const verdict: Verdict = { figures: {}, failures: [] };
  const { leader, standby } = await cluster.waitHealthy(HEALTHY_TIMEOUT_MS);
  verdict.figures['leader -> new leader'] = `${leader} -> ${standby}`;
  const { workspaceId, token } = await tenant(cluster.url, receiver, event);
  const traffic = apis.map((api, index) => new Traffic({ apiUrl: api.url, token }, USERS_PER_API, 50, `${event}-${index + 1}`));
  // Often: after a kill, the time with neither the old primary's sessions nor a new primary can
  // be a few hundred milliseconds, and the check needs probes inside it.
  const readiness = apis.map((api) => new ReadinessProbe(api.url.replace(/\/api\/v1$/, ''), READINESS_EVERY_MS));
  const primary = new PrimaryProbe(cluster.nodes);
  for (const part of [...traffic, ...readiness, primary]) part.start();
  await sleep(BEFORE_MS);

  const actionAt = Date.now();
  let switchedAt = actionAt;
  let oldSessionsGone: Promise<number>;
  if (event === 'failover') {
    oldSessionsGone = (await cluster.killPostmaster(leader)).childrenGone;
    log(`${event}: SIGKILL to ${leader}'s postmaster`);
  } else {
    oldSessionsGone = (await cluster.sessionEnd(leader)).ended;
    log(`${event}: patronictl switchover ${leader} -> ${standby}`);
    await cluster.switchover(leader, standby).catch((error: Error) => verdict.failures.push(error.message));
    switchedAt = Date.now();
  }
  await waitFor('a new writable primary', NEW_PRIMARY_TIMEOUT_MS, async () => primary.outage(actionAt) !== null).catch((error: Error) =>
    verdict.failures.push(error.message.split('\n')[0]!),
  );
  const webhookAfterUp = nextWebhook(receiver, event);
  await sleep(AFTER_MS);
  await Promise.all(traffic.map((part) => part.stop()));
  for (const probe of readiness) probe.stop();
  await primary.stop();

  const outage = primary.outage(actionAt);
  const ledger = merged(traffic.map((part) => part.ledger));
  if (outage) {
    // Down: no new connection reaches a primary, and no session of the old one is left (the
    // killed postmaster's backends finish what they were doing first).
    const timeline: Timeline = {
      stopBegin: actionAt,
      downAt: Math.max(outage.firstFailure.endedAt, await oldSessionsGone),
      startBegin: outage.lastFailure.startedAt,
      upAt: outage.recovery.endedAt,
    };
    verdict.figures['no writable primary (s)'] = seconds(timeline.upAt - (event === 'failover' ? actionAt : outage.firstFailure.startedAt));
    verdict.figures[event === 'failover' ? "the killed postmaster's backends lived on (s)" : 'sessions of the old primary cut after (s)'] = seconds(
      (await oldSessionsGone) - actionAt,
    );
    if (event === 'switchover') verdict.figures['patronictl switchover took (s)'] = seconds(switchedAt - actionAt);
    verdict.figures['the nodes just before the new primary'] = outage.lastFailure.error ?? '';
    checkAnswers(
      ledger.answers,
      readiness.flatMap((probe) => probe.answers),
      timeline,
      verdict,
    );
    figuresOfTheOutage(ledger.answers, actionAt, timeline.downAt, event, verdict);
  } else {
    verdict.failures.push('the probe never saw the primary go away and a new one come');
  }

  const db = new pg.Client({ connectionString: cluster.url });
  db.on('error', () => {});
  await db.connect();
  try {
    const drainMs = await drain(db, workspaceId, receiver);
    verdict.figures['drain after the traffic stopped (s)'] = seconds(drainMs);
    const webhookAt = await webhookAfterUp;
    if (webhookAt === null) verdict.failures.push('the workers delivered nothing after the new primary took over');
    const leads = await checkLeads(db, workspaceId, ledger, verdict);
    await checkIdempotency(db, ledger, verdict);
    const received = receiver.requests.filter((request) => request.path.startsWith(`/${event}/`));
    await checkDeliveries(db, workspaceId, leads, received, verdict, { exactlyOnce: true });
  } finally {
    await db.end();
  }
  checkWorkers(workers, actionAt, verdict);
  // The key cache's LISTEN connection dies with the old primary and comes back on the new one.
  verdict.figures['key cache listening again after (s)'] = apis
    .map((api) => {
      const line = api.service.logs.find((entry) => entry.msg === 'API key cache listening for key changes again' && Number(entry.time) >= actionAt);
      return line ? seconds(Number(line.time) - actionAt) : 'never';
    })
    .join(', ');
  for (const [index, api] of apis.entries()) if (!api.service.alive()) verdict.failures.push(`API ${index + 1} exited: ${api.service.stderr.slice(-2000)}`);
  return verdict;
}

/**
 * The figures the failover is judged by: 503s, 500s (none), and the first 201 sent once the
 * old primary was gone (a request the old primary still served is no recovery).
 */
function figuresOfTheOutage(answers: Answer[], actionAt: number, downAt: number, event: Event, verdict: Verdict): void {
  const after = answers.filter((answer) => answer.startedAt >= actionAt);
  verdict.figures['503 answers (with Retry-After)'] =
    `${after.filter((answer) => answer.status === 503).length} (${after.filter((answer) => answer.status === 503 && answer.retryAfter !== null).length})`;
  verdict.figures['500 answers'] = answers.filter((answer) => answer.status === 500).length;
  const firstCreated = after
    .filter((answer) => answer.status === 201 && answer.startedAt >= downAt)
    .reduce<number | null>((first, answer) => Math.min(first ?? Infinity, answer.startedAt + answer.ms), null);
  const label = event === 'failover' ? 'kill -> first 201 (s)' : 'switchover command -> first 201 after the outage (s)';
  if (firstCreated === null) verdict.failures.push('no 201 after the outage');
  else verdict.figures[label] = seconds(firstCreated - actionAt);
}

let cleanup: (() => Promise<void>) | null = null;
let cleaning: Promise<void> | null = null;
const tearDown = () => (cleaning ??= (cleanup ?? (async () => {}))());

async function main(): Promise<number> {
  const started = Date.now();
  installPackages(log);
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-needed.mjs')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const services = new Services();
  let cluster: HaCluster | null = null;
  let receiver: Receiver | null = null;
  cleanup = async () => {
    await services.killAll();
    await receiver?.close().catch((error: Error) => log(`receiver: ${error.message}`));
    await cluster?.stop();
  };
  const results: Record<string, Verdict> = {};
  try {
    const clusterBegin = Date.now();
    cluster = await startCluster();
    log(`cluster up in ${seconds(Date.now() - clusterBegin)} s (etcd, 2 Patroni nodes, HAProxy at ${cluster.url})`);
    receiver = await startReceiver({ databaseUrl: cluster.url });
    const migrate = await runToEnd(process.execPath, [path.join(ROOT, 'dist', 'src', 'migrate-main.js')], { env: { ...baseEnvironment(), DATABASE_URL: cluster.url } });
    if (migrate.code !== 0) throw new Error(`migrations failed: ${migrate.stderr}${migrate.stdout}`);
    // The same processes live through both events: nothing is restarted.
    const url = cluster.url;
    const running: Running = {
      cluster,
      receiver,
      apis: await Promise.all([0, 1].map(() => services.startApi(url))),
      workers: await Promise.all([0, 1].map(() => services.startWorker(url))),
    };
    for (const event of EVENTS) {
      log(`${event}: starting`);
      results[event] = await runEvent(event, running);
    }
    const { leader } = await cluster.waitHealthy(HEALTHY_TIMEOUT_MS);
    log(`leader at the end: ${leader}`);
    // Fails when a delivery broke the document's webhook shape (the teardown only logs that).
    const closing = receiver;
    receiver = null;
    await closing.close();
  } finally {
    await tearDown();
  }
  const passed = printVerdicts(results);
  process.stdout.write(`\nwhole run: ${seconds(Date.now() - started).toFixed(0)} s\n`);
  if (args.json) writeFileSync(args.json, `${JSON.stringify(results, null, 2)}\n`);
  return passed ? 0 : 1;
}

// Ctrl-C reaches this process twice (from the terminal, and relayed by tsx): a listener stays
// for every repeat, so none of them ends the process before the teardown has finished.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (cleaning) return;
    log(`${signal}: tearing down`);
    void tearDown().finally(() => process.exit(130));
  });
}

main().then(
  (code) => process.exit(code),
  async (error: unknown) => {
    process.stderr.write(`failover: ${error instanceof Error ? error.stack : String(error)}\n`);
    await tearDown().catch(() => {});
    process.exit(1);
  },
);
