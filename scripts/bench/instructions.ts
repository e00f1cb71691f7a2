// `npm run bench:instructions -- NAME=DIR [NAME=DIR ...] [--traced NAME,...] [--requests N]
//   [--warmup N] [--windows W] [--repetitions R] [--only me,read,new,existing] [--keep]`
//
// Instructions the service process executes per request, counted by valgrind's callgrind: a
// figure the machine's load cannot move (wall-clock A/Bs on this shared machine vary by about a
// fifth). Each NAME=DIR is a built tree (`npm ci && npm run build` in it, e.g. a scratch
// worktree of another commit; `.` is this one). For each repetition, each variant in turn: a
// fresh database, the tree's own service (`dist/src/main.js` with its `npm start` node flags)
// under callgrind, its own CLI's demo workspace, 2,000 people seeded by SQL, 500 new people
// through the service (the bench's priming: companies and tags exist), then per workload a
// warm-up and W measured windows of N sequential requests on one keep-alive connection:
// callgrind's counters zeroed before a window and dumped after it. Callgrind instruments only
// the windows (and an idle one): start, priming and warm-ups run uninstrumented, much faster.
// Each count is given twice: the main thread's (the event loop: JavaScript, its runtime, the
// scavenges), which repeats within a few per cent, and all threads' (V8's concurrent marking,
// sweeping and optimizing compiler besides), which moves with when a major GC falls in a window.
// `--traced NAME`: that variant exports every span over OTLP http/protobuf to a local sink of
// this process that answers 200 (OTEL_EXPORTER_OTLP_ENDPOINT). Others get no OTEL variable.
// `--keep`: callgrind's dump files are kept (callgrind_annotate shows where a window went).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { databaseUrl } from '../database-url.js';
import { seedLeads } from './seed.js';
import { adminQuery, benchServiceEnv, freePort, nodeFlagsOf, stopChild, waitForHttp } from './support.js';
import { nextRequest, type Workload } from './workloads.js';

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    traced: { type: 'string', default: '' },
    requests: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '300' },
    repetitions: { type: 'string', default: '2' },
    only: { type: 'string', default: 'me,read,new,existing' },
    windows: { type: 'string', default: '2' },
    keep: { type: 'boolean', default: false },
  },
});

interface Variant {
  name: string;
  dir: string;
  traced: boolean;
}
const traced = new Set(flags.traced!.split(',').filter(Boolean));
const variants: Variant[] = positionals.map((argument) => {
  const match = /^([\w.-]+)=(.+)$/.exec(argument);
  if (!match) throw new Error(`${argument}: expected NAME=DIR`);
  return { name: match[1]!, dir: path.resolve(match[2]!), traced: traced.has(match[1]!) };
});
if (variants.length === 0) throw new Error('name at least one variant: NAME=DIR (a built tree)');
for (const name of traced) if (!variants.some((variant) => variant.name === name)) throw new Error(`--traced ${name}: no such variant`);
const requests = Number(flags.requests);
const warmup = Number(flags.warmup);
const repetitions = Number(flags.repetitions);
const windowCount = Number(flags.windows);
const WORKLOADS = ['me', 'read', 'new', 'existing'] as const;
type WorkloadName = (typeof WORKLOADS)[number];
const only = flags.only!.split(',').filter(Boolean) as WorkloadName[];
for (const name of only) if (!WORKLOADS.includes(name)) throw new Error(`--only ${name}: not one of ${WORKLOADS.join(', ')}`);
const LABELS: Record<WorkloadName, string> = {
  me: 'GET /me',
  read: 'GET /leads/{id}',
  new: 'POST /leads new person',
  existing: 'POST /leads existing person',
};
const SEEDED = 2_000;
const PRIMING = 500;
const IDLE_SECONDS = 5;
const SETTLE = 50;

const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const log = (message: string) => process.stderr.write(`[instructions] ${message}\n`);

/** A local OTLP receiver that takes every export and answers 200 with nothing kept. */
async function startSink(): Promise<{ endpoint: string; exports: () => number; close: () => Promise<void> }> {
  let exports = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      exports += 1;
      response.writeHead(200, { 'content-type': request.headers['content-type'] ?? 'application/x-protobuf' }).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports: () => exports,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The tree's own CLI (dist/src/cli.mjs), its JSON answer. */
async function cli(dir: string, args: string[], env: Record<string, string>): Promise<any> {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(dir, 'dist', 'src', 'cli.mjs'), ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  return JSON.parse(stdout);
}

/** Callgrind's counters of the process: zeroed, or dumped and the dump's total read. */
class Counter {
  private dumps = 0;
  constructor(
    private readonly pid: number,
    private readonly outDir: string,
  ) {}
  /** Instrumentation on or off: the service starts, primes and warms up uninstrumented, several times faster. */
  async instrument(on: boolean): Promise<void> {
    await promisify(execFile)('callgrind_control', [`--instr=${on ? 'on' : 'off'}`, String(this.pid)]);
  }
  async zero(): Promise<void> {
    await promisify(execFile)('callgrind_control', ['--zero', String(this.pid)]);
  }
  /** The counts since the last zero: the main thread's (the event loop: JavaScript, its runtime, scavenges) and all threads'. */
  async dump(): Promise<Count> {
    await promisify(execFile)('callgrind_control', ['--dump', String(this.pid)]);
    this.dumps += 1;
    const prefix = `callgrind.${this.pid}.${this.dumps}-`;
    for (let tries = 0; tries < 600; tries++) {
      const files = readdirSync(this.outDir).filter((file) => file.startsWith(prefix));
      const summaries = files.map((file) => ({ thread: Number(file.slice(prefix.length)), summary: /^summary: (\d+)$/m.exec(readTextOrEmpty(path.join(this.outDir, file))) }));
      if (summaries.length > 0 && summaries.every((each) => each.summary)) {
        return {
          main: summaries.filter((each) => each.thread === 1).reduce((sum, each) => sum + Number(each.summary![1]), 0),
          all: summaries.reduce((sum, each) => sum + Number(each.summary![1]), 0),
        };
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${prefix}*: no complete dump after a minute (files: ${readdirSync(this.outDir).join(', ')})`);
  }
}

interface Count {
  main: number;
  all: number;
}

function readTextOrEmpty(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Sends `count` requests of the workload one after another on one keep-alive connection; every answer must be 2xx. */
async function send(base: string, token: string, workload: Workload, count: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < count; i++) {
      const request = nextRequest(workload);
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...request.headers };
      if (request.body !== undefined) headers['content-type'] = 'application/json';
      const status = await new Promise<number>((resolve, reject) => {
        const outgoing = http.request(`${base}${request.path}`, { method: request.method, headers, agent }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        });
        outgoing.on('error', reject);
        outgoing.end(request.body);
      });
      if (status < 200 || status > 299) throw new Error(`${request.method} ${request.path} answered ${status}`);
    }
  } finally {
    agent.destroy();
  }
}

interface Measured {
  idlePerSecond: Count;
  perRequest: Record<string, Count[]>;
  exports: number | null;
}

async function measureVariant(variant: Variant, repetition: number): Promise<Measured> {
  const database = `lead_intake_instructions_${Date.now()}`;
  const url = databaseUrl(adminUrl, database);
  await adminQuery(adminUrl, `CREATE DATABASE "${database}"`);
  const outDir = mkdtempSync(path.join(os.tmpdir(), 'lead-intake-callgrind-'));
  const sink = variant.traced ? await startSink() : null;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let service: ChildProcess | null = null;
  try {
    // The same environment as `npm run bench` gives its service, OTEL variables only when traced.
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...benchServiceEnv(url, redisUrl, port),
      WORKER: 'off',
      ...(sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint } : {}),
    };
    service = spawn(
      'valgrind',
      [
        '--tool=callgrind',
        '--quiet',
        // V8 writes its compiled code into anonymous memory: valgrind must notice it changing.
        '--smc-check=all-non-file',
        '--instr-atstart=no',
        // A count per thread: the main thread's apart from the garbage collector's concurrent
        // marking and sweeping and the optimizing compiler, which run on V8's worker threads.
        '--separate-threads=yes',
        `--callgrind-out-file=${path.join(outDir, 'callgrind.%p')}`,
        process.execPath,
        ...nodeFlagsOf('start', variant.dir),
        path.join(variant.dir, 'dist', 'src', 'main.js'),
      ],
      { cwd: variant.dir, env, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const started = performance.now();
    await waitForHttp(`${base}/api/v1/me`, 20 * 60_000);
    log(`${variant.name} #${repetition}: listening after ${((performance.now() - started) / 1000).toFixed(0)} s under callgrind`);
    const demo = await cli(variant.dir, ['demo'], { DATABASE_URL: url, LOG_LEVEL: 'warn' });
    const token = demo.key.token as string;
    const seeded = await seedLeads(url, demo.workspace.id as number, 1, SEEDED);
    const runId = `i${Date.now().toString(36)}`;
    const workloads: Record<WorkloadName, Workload> = {
      me: { kind: 'get', path: '/api/v1/me' },
      read: { kind: 'get-random-lead', ids: { from: seeded.firstId, to: seeded.lastId }, inOrder: true },
      new: { kind: 'new-lead', runId, phoneBase: 2_000_000_000 },
      existing: { kind: 'existing-lead', seeded: SEEDED, inOrder: true },
    };
    // Every new person refers to one of 500 company domains and 11 tags, created here.
    await send(base, token, workloads.new, PRIMING);
    const counter = new Counter(service.pid!, outDir);
    await counter.instrument(true);
    await counter.zero();
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
    const idlePerSecond = per(await counter.dump(), IDLE_SECONDS);
    await counter.instrument(false);
    const exportsBefore = sink?.exports() ?? 0;
    const perRequest: Measured['perRequest'] = {};
    for (const name of only) {
      await send(base, token, workloads[name], warmup);
      await counter.instrument(true);
      // The first requests after instrumentation is switched on count more than later ones (the
      // same in every variant, but not repeatable): they are sent and not counted.
      await send(base, token, workloads[name], SETTLE);
      const windows: Count[] = [];
      for (let window = 1; window <= windowCount; window++) {
        await counter.zero();
        const windowStarted = performance.now();
        await send(base, token, workloads[name], requests);
        windows.push(per(await counter.dump(), requests));
        log(`${variant.name} #${repetition} ${LABELS[name]}: ${format(windows.at(-1)!)} M per request (${((performance.now() - windowStarted) / 1000).toFixed(0)} s)`);
      }
      await counter.instrument(false);
      perRequest[name] = windows;
    }
    return { idlePerSecond, perRequest, exports: sink ? sink.exports() - exportsBefore : null };
  } finally {
    if (service) await stopChild(service);
    await sink?.close();
    if (flags.keep) log(`callgrind's dumps kept in ${outDir}`);
    else rmSync(outDir, { recursive: true, force: true });
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).catch(() => {});
  }
}

const per = (count: Count, divisor: number): Count => ({ main: count.main / divisor, all: count.all / divisor });
const millions = (instructions: number) => (instructions / 1e6).toFixed(3);
/** Millions of instructions: the main thread's, all threads' in parentheses. */
const format = (count: Count) => `${millions(count.main)} (${millions(count.all)})`;

async function main(): Promise<void> {
  try {
    await promisify(execFile)('valgrind', ['--version']);
  } catch {
    throw new Error('valgrind is not installed (apt-get install valgrind): it counts the instructions');
  }
  log(
    `${variants.map((variant) => `${variant.name}=${variant.dir}${variant.traced ? ' (traced)' : ''}`).join(', ')}; ${warmup} warm-up + ${windowCount} x ${requests} requests per workload, ${repetitions} repetitions`,
  );
  const results: Array<{ variant: Variant; repetition: number; measured: Measured }> = [];
  // Variants alternate within each repetition.
  for (let repetition = 1; repetition <= repetitions; repetition++) {
    for (const variant of variants) results.push({ variant, repetition, measured: await measureVariant(variant, repetition) });
  }
  const header = ['variant', 'rep', ...only.map((name) => `${LABELS[name]} (M instr/request, each window)`), 'idle (M instr/s)', 'OTLP exports'];
  const rows = results.map(({ variant, repetition, measured }) => [
    variant.name,
    String(repetition),
    ...only.map((name) => measured.perRequest[name]!.map(format).join(', ')),
    format(measured.idlePerSecond),
    measured.exports === null ? '' : String(measured.exports),
  ]);
  process.stdout.write(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n${rows.map((row) => `| ${row.join(' | ')} |`).join('\n')}\n`);
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
