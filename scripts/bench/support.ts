import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import type { LoadResult, LoadSpec } from './load.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
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

export function spawnChild(args: string[], env: Record<string, string>, options: { stdout?: 'pipe' | 'ignore' } = {}): ChildProcess {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', options.stdout ?? 'ignore', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export const spawnTsx = (file: string, args: string[], env: Record<string, string>, options: { stdout?: 'pipe' | 'ignore' } = {}) =>
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

/** Runs the compiled admin CLI and returns its JSON. */
export async function runCli(args: string[], env: Record<string, string>): Promise<any> {
  const child = spawnChild([path.join(ROOT, 'dist', 'src', 'cli', 'main.js'), ...args], env, { stdout: 'pipe' });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`cli ${args.join(' ')} failed with exit code ${code}`);
  return JSON.parse(stdout);
}

/** One load run in its own process (see load.ts). */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const child = spawnTsx('scripts/bench/load.ts', [JSON.stringify(spec)], {}, { stdout: 'pipe' });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`load generator failed with exit code ${code}`);
  return JSON.parse(stdout) as LoadResult;
}

export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
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
 * Seeds leads numbered `from`..`to` set-based, with their match keys, in chunks: the same
 * people load.ts sends as "existing" (email seed<n>@seed<n % 1000>.example, phone
 * 415 000 0000 + n, LinkedIn /in/seed-<n>).
 */
export async function seedLeads(pool: pg.Pool, workspaceId: number, from: number, to: number): Promise<{ firstId: number; lastId: number }> {
  const CHUNK = 100_000;
  let firstId = Number.MAX_SAFE_INTEGER;
  let lastId = 0;
  for (let start = from; start <= to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK - 1);
    const { rows } = await pool.query<{ first: string; last: string }>(`
      WITH created AS (
        INSERT INTO leads (workspace_id, name, source, emails, phones, links, chargeable)
        SELECT $1, 'Seed Person ' || n, 'bench',
          ARRAY['seed' || n || '@seed' || (n % 1000) || '.example'],
          ARRAY[(4150000000 + n)::text],
          jsonb_build_array(jsonb_build_object('type', 'linkedin', 'url', 'https://www.linkedin.com/in/seed-' || n)),
          false
        FROM generate_series($2::int, $3::int) AS n
        RETURNING id, emails[1] AS email, phones[1] AS phone, 'seed-' || substr(name, 13) AS handle
      ), identities AS (
        INSERT INTO lead_identities (workspace_id, kind, value, lead_id)
        SELECT $1, kind, value, id FROM created
        CROSS JOIN LATERAL (VALUES ('email', email), ('phone', phone), ('linkedin', handle)) AS keys (kind, value)
      )
      SELECT min(id) AS first, max(id) AS last FROM created
    `, [workspaceId, start, end]);
    firstId = Math.min(firstId, Number(rows[0]!.first));
    lastId = Math.max(lastId, Number(rows[0]!.last));
  }
  await pool.query('ANALYZE leads; ANALYZE lead_identities');
  return { firstId, lastId };
}
