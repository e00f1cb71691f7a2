// `npm run scale-out-citus`: the service on Citus grows from two worker nodes to three under
// load, online (docs/operations.md, "Citus").
//
// Boots the cluster of ../shared/tools/citus (cluster.sh: a coordinator and two workers), makes
// a database on it, and runs the compiled API and a worker against the coordinator with steady
// write and delivery traffic in several workspaces (scripts/faults/traffic.ts; every workspace's
// workflows post to a local receiver). Then it starts a third worker node
// (scripts/citus/extra-node.sh), adds it and moves shards onto it with citus_rebalance_start,
// keeps the traffic going until the rebalance has finished and a few seconds after, drains, and
// checks: every acknowledged lead present once, every delivery made once and received once
// (exactly once: nothing was killed), no 5xx; prints the figures of the move. Exits 1 when a
// requirement fails, 2 when the cluster's tools are not there.
//
//   npm run scale-out-citus [-- --users 2] [--workspaces 3] [--before 5] [--after 5] [--json file]
//                           [--transfer-mode force_logical | block_writes]
//
// force_logical (the default) is how a production cluster moves shards online: every node runs
// with wal_level = logical (the script sets it and puts it back), a shard is copied while its
// writes go on and they wait only for the switch-over. block_writes holds a shard's writes for
// its whole copy: on a busy machine longer than a client's patience.

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startReceiver } from '../test/support/receiver.js';
import { ROOT } from '../test/support/service.js';
import { drain, Services, tenant, WORKER_ENV } from './faults/services.js';
import { Traffic } from './faults/traffic.js';
import { checkDeliveries, checkIdempotency, checkLeads, printVerdicts, type Verdict } from './faults/verify.js';

const { values: args } = parseArgs({
  options: {
    users: { type: 'string', default: '2' },
    workspaces: { type: 'string', default: '3' },
    before: { type: 'string', default: '5' },
    after: { type: 'string', default: '5' },
    json: { type: 'string' },
    'transfer-mode': { type: 'string', default: 'force_logical' },
  },
});
const DATABASE = 'citus_scale_out';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message: string) => process.stderr.write(`scale-out-citus: ${message}\n`);
const run = (command: string, commandArgs: string[], env: Record<string, string> = {}) =>
  execFileSync(command, commandArgs, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } }).trim();
const TRANSFER_MODES = ['force_logical', 'block_writes'];

function citusTools(): string | null {
  try {
    return run(path.join(ROOT, 'scripts', 'citus', 'tools.sh'), []);
  } catch {
    return null;
  }
}

async function query<Row extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Row>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function main(): Promise<number> {
  const tools = citusTools();
  if (!tools) {
    log('SKIPPED: ../shared/tools/citus (or $CITUS_TOOLS) is not there, so there is no Citus cluster to grow');
    return 2;
  }
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-needed.mjs')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const transferMode = args['transfer-mode'];
  if (!TRANSFER_MODES.includes(transferMode)) throw new Error(`--transfer-mode must be one of ${TRANSFER_MODES.join(', ')}`);
  const logical = transferMode === 'force_logical';
  const cluster = path.join(tools, 'cluster.sh');
  const extraNode = path.join(ROOT, 'scripts', 'citus', 'extra-node.sh');
  run(cluster, ['up']);
  if (logical) run(extraNode, ['wal-level', 'logical']);
  const url = run(cluster, ['createdb', DATABASE]);
  const started = Date.now();
  const services = new Services();
  const receiver = await startReceiver({ databaseUrl: url });
  const verdict: Verdict = { figures: {}, failures: [] };
  const workspaces: Record<string, Verdict> = {};
  try {
    // The API migrates (and distributes) before it listens.
    const { service: api, url: apiUrl } = await services.startApi(url);
    // A receiver slower than the webhook timeout gets the delivery again (at least once, by design):
    // a generous timeout keeps a busy machine from passing for a duplicate the move caused.
    const worker = services.start('worker-main.js', url, { ...WORKER_ENV, WEBHOOK_TIMEOUT_MS: '15000' });
    await worker.waitForLog('worker started');
    const placement = async () =>
      query<{ node: string; shards: number }>(
        url,
        "SELECT nodename || ':' || nodeport AS node, count(*)::int AS shards FROM citus_shards WHERE citus_table_type = 'distributed' GROUP BY 1 ORDER BY 1",
      );
    const tenants = [];
    for (let index = 0; index < Number(args.workspaces); index++) tenants.push(await tenant(url, receiver, `w${index}`));
    const traffic = tenants.map(({ token }, index) => new Traffic({ apiUrl, token }, Number(args.users), 50, `w${index}`));
    verdict.figures['shards per node before'] = (await placement()).map((row) => `${row.node} ${row.shards}`).join(', ');
    traffic.forEach((users) => users.start());
    await sleep(Number(args.before) * 1000);

    const port = run(extraNode, ['up', DATABASE], { CITUS_WAL_LEVEL: logical ? 'logical' : 'replica' });
    const moveStarted = Date.now();
    await query(url, 'SELECT citus_add_node($1, $2)', ['127.0.0.1', Number(port)]);
    verdict.figures['shard transfer mode'] = transferMode;
    await query(url, 'SELECT citus_rebalance_start(shard_transfer_mode => $1::citus.shard_transfer_mode)', [transferMode]);
    for (;;) {
      const [status] = await query<{ state: string }>(url, 'SELECT state::text FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1');
      if (!status || ['finished', 'failed', 'cancelled'].includes(status.state)) {
        if (status?.state !== 'finished') verdict.failures.push(`the rebalance ended ${status?.state ?? 'without a job'}`);
        break;
      }
      await sleep(200);
    }
    const moveEnded = Date.now();
    log(`rebalance done in ${moveEnded - moveStarted} ms`);
    await sleep(Number(args.after) * 1000);
    await Promise.all(traffic.map((users) => users.stop()));

    const answers = traffic.flatMap((users) => users.ledger.answers);
    const during = answers.filter((answer) => answer.startedAt + answer.ms >= moveStarted && answer.startedAt <= moveEnded);
    const statuses = (list: typeof answers) =>
      [...list.reduce((counts, answer) => counts.set(answer.status, (counts.get(answer.status) ?? 0) + 1), new Map<number, number>())]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${status === 0 ? 'none' : status}: ${count}`)
        .join(', ');
    const slowest = (list: typeof answers) => list.reduce((max, answer) => Math.max(max, answer.ms), 0);
    verdict.figures['move: node added -> rebalance finished (s)'] = Number(((moveEnded - moveStarted) / 1000).toFixed(2));
    verdict.figures['shards per node after'] = (await placement()).map((row) => `${row.node} ${row.shards}`).join(', ');
    verdict.figures['requests sent (all / during the move)'] = `${answers.length} / ${during.length}`;
    verdict.figures['answers per status during the move'] = statuses(during);
    verdict.figures['answers per status in all'] = statuses(answers);
    verdict.figures['slowest answer during the move (ms)'] = slowest(during);
    verdict.figures['slowest answer in all (ms)'] = slowest(answers);
    for (const answer of answers.filter((item) => item.status >= 500 || item.status === 0)) {
      verdict.failures.push(
        `${answer.kind} at +${answer.startedAt - moveStarted} ms from the move: ${answer.status === 0 ? 'no answer' : answer.status} ${JSON.stringify(answer.body)}`,
      );
    }
    if (!(await placement()).some((row) => row.node.endsWith(`:${port}`))) verdict.failures.push('no shard moved to the new node');

    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      for (const [index, { workspaceId }] of tenants.entries()) {
        const checked: Verdict = { figures: {}, failures: [] };
        checked.figures['drained after the traffic stopped (s)'] = Number(((await drain(db, workspaceId, receiver)) / 1000).toFixed(1));
        const leads = await checkLeads(db, workspaceId, traffic[index]!.ledger, checked);
        await checkIdempotency(db, traffic[index]!.ledger, checked);
        await checkDeliveries(
          db,
          workspaceId,
          leads,
          receiver.requests.filter((request) => request.path.startsWith(`/w${index}/`)),
          checked,
          { exactlyOnce: true },
        );
        const { rows: retried } = await db.query<{ error: string; attempts: number }>(
          "SELECT coalesce(error, status_code::text, '?') AS error, count(*)::int AS attempts FROM delivery_attempts WHERE workspace_id = $1 AND (error IS NOT NULL OR status_code >= 300) GROUP BY 1",
          [workspaceId],
        );
        checked.figures['failed attempts (retried)'] = retried.length === 0 ? 'none' : retried.map((row) => `${row.attempts} x ${row.error}`).join('; ');
        workspaces[`workspace w${index}`] = checked;
      }
    } finally {
      await db.end();
    }
    for (const service of [api, worker]) if (!service.alive()) verdict.failures.push(`a process exited: ${service.stderr.slice(-2000)}`);
    // What the processes logged as warnings or errors, once each: what a failure above came from.
    const logged = new Map<string, number>();
    for (const [name, service] of [
      ['api', api],
      ['worker', worker],
    ] as const) {
      for (const line of service.logs.filter((entry) => (entry.level ?? 0) >= 40)) {
        const error = (line.err as { message?: string } | undefined)?.message;
        const key = `${name}: ${line.msg ?? ''}${error ? ` (${error.split('\n')[0]})` : ''}`;
        logged.set(key, (logged.get(key) ?? 0) + 1);
      }
    }
    verdict.figures['warnings and errors logged'] = logged.size === 0 ? 'none' : [...logged].map(([line, count]) => `${count} x ${line}`).join('; ');
  } finally {
    await services.killAll();
    await receiver.close();
    try {
      run(cluster, ['dropdb', DATABASE]);
    } catch {
      /* the cluster may be gone */
    }
    run(extraNode, ['down']);
    if (logical) run(extraNode, ['wal-level', 'replica']);
  }
  const passed = printVerdicts({ 'scale out 2 -> 3 worker nodes': verdict, ...workspaces });
  process.stdout.write(`\nwhole run: ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  if (args.json) writeFileSync(args.json, `${JSON.stringify({ move: verdict, ...workspaces }, null, 2)}\n`);
  return passed ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`scale-out-citus: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
