import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { runCli as runCompiledCli } from '../../test/support/cli.js';
import { procStatFields } from '../proc-stat.js';
import type { LoadResult, LoadSpec } from './load.js';
import type { OpenLoopResult, OpenLoopSpec } from './open-loop.js';

export { freePort } from '../../test/support/ports.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The node flags an npm script runs its entry point with (e.g. the heap limits of `npm start`),
 * so the benchmark runs the service and workers exactly as they are deployed; `root`: the tree
 * whose package.json to read (another build's, for scripts/bench/instructions.ts).
 */
export function nodeFlagsOf(script: string, root = ROOT): string[] {
  const scripts = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  // `node --flags dist/...`, optionally after `exec` (the scripts exec node so that signals
  // reach it). Not finding it is an error: a silently empty list ran the bench without the
  // heap limits once.
  const match = /(?:^|&&\s*)(?:exec\s+)?node\s+((?:--\S+\s+)*)dist\//.exec(scripts[script] ?? '');
  if (!match) throw new Error(`package.json scripts.${script} does not run \`node [flags] dist/...\``);
  return match[1]!.split(/\s+/).filter(Boolean);
}

/** Resident set size of a process in bytes (Linux /proc), or null when unavailable. */
export function rssOf(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** CPU time a process has used so far in seconds (Linux /proc: user + system), or null. */
export function cpuSecondsOf(pid: number): number | null {
  const fields = procStatFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND : null;
}
// USER_HZ, 100 on every Linux architecture node runs on.
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * The environment every service the bench starts runs with. 32 connections against a pool of 10
 * queue on purpose: with the default 1.5 s wait, a loaded machine would turn the slowest batches
 * into 503s (load shedding), which is not what the bench measures; it waits up to 30 s instead.
 * Its one key stands for many integrators, so neither its budget per minute nor its requests in
 * progress are bounded (the fixed-rate runs keep hundreds in flight whenever the machine stalls).
 */
export const benchServiceEnv = (databaseUrl: string, redisUrl: string, port: number): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  REDIS_URL: redisUrl,
  PORT: String(port),
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_MINUTE: '1000000000',
  CONCURRENT_REQUESTS_PER_KEY: '1000000',
  DATABASE_CONNECT_TIMEOUT_MS: '30000',
});

/** Samples a process's RSS every 250 ms and keeps the peak. */
export class RssSampler {
  peak = 0;
  private timer: NodeJS.Timeout | null = null;
  constructor(private readonly pids: () => number[]) {}
  start(): this {
    this.peak = 0;
    this.sample();
    this.timer = setInterval(() => this.sample(), 250);
    return this;
  }
  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.sample();
    return this.peak;
  }
  private sample() {
    for (const pid of this.pids()) this.peak = Math.max(this.peak, rssOf(pid) ?? 0);
  }
}

const children = new Set<ChildProcess>();

export function spawnChild(args: string[], env: Record<string, string>, options: { stdout?: 'pipe' | 'ignore'; stderr?: 'pipe' | 'inherit' } = {}): ChildProcess {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', options.stdout ?? 'ignore', options.stderr ?? 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export const spawnTsx = (file: string, args: string[], env: Record<string, string>, options: Parameters<typeof spawnChild>[2] = {}) =>
  spawnChild(['--import', 'tsx', path.join(ROOT, file), ...args], env, options);

export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
  const [code] = await exited;
  clearTimeout(timer);
  return code as number | null;
}

export function killAllChildren(): void {
  for (const child of children) child.kill('SIGKILL');
}

/** Waits until `url` answers any HTTP status. */
export async function waitForHttp(url: string, timeoutMs = 60000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fetch(url);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export class CliFailed extends Error {
  constructor(
    readonly args: string[],
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(`cli ${args.join(' ')} failed with exit code ${code}: ${stderr.trim()}`);
  }
}

/** Runs the compiled admin CLI (as the tests do) and returns its JSON; CliFailed (with its stderr) on a non-zero exit. */
export async function runCli(args: string[], env: Record<string, string>): Promise<any> {
  const result = await runCompiledCli(args, env);
  if (result.code !== 0) throw new CliFailed(args, result.code, result.stderr);
  return result.json;
}

/** One fixed-rate run in its own process (see open-loop.ts). */
export async function runOpenLoop(spec: OpenLoopSpec): Promise<OpenLoopResult> {
  return runJsonChild('scripts/bench/open-loop.ts', spec);
}

/** One load run in its own process (see load.ts). */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return runJsonChild('scripts/bench/load.ts', spec);
}

/**
 * One load run, and the CPU time (user + system) the server process `pid` used per answer
 * meanwhile, warm-up included; null when it cannot be read.
 */
export async function runLoadMeasuringCpu(spec: LoadSpec, pid: number | null): Promise<{ result: LoadResult; cpuMicrosecondsPerAnswer: number | null }> {
  const before = pid === null ? null : cpuSecondsOf(pid);
  const result = await runLoad(spec);
  const after = pid === null ? null : cpuSecondsOf(pid);
  const cpuMicrosecondsPerAnswer = before !== null && after !== null && result.answersIncludingWarmup > 0 ? ((after - before) * 1e6) / result.answersIncludingWarmup : null;
  return { result, cpuMicrosecondsPerAnswer };
}

/** Runs a bench script in its own process with a JSON argument and returns the JSON it prints. */
async function runJsonChild<T>(file: string, spec: unknown): Promise<T> {
  const child = spawnTsx(file, [JSON.stringify(spec)], {}, { stdout: 'pipe' });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`${file} failed with exit code ${code}`);
  return JSON.parse(stdout) as T;
}

export async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * Waits until no query of `database` is running (other than this one): requests still in
 * flight when a load run stopped finish before the next scenario starts.
 */
export async function waitForIdleDatabase(pool: pg.Pool, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query<{ busy: number }>(`
      SELECT count(*)::int AS busy FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state <> 'idle'
    `);
    if (rows[0]!.busy === 0 || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Seeds leads through seed.ts on the pool's database (kept for callers that hold a pool). */
export async function seedLeads(pool: pg.Pool, workspaceId: number, from: number, to: number): Promise<{ firstId: number; lastId: number }> {
  const { seedLeads: seed } = await import('./seed.js');
  return seed((pool as unknown as { options: { connectionString: string } }).options.connectionString, workspaceId, from, to);
}
