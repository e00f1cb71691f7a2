import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../..');

export type LogLine = { msg?: string; level?: number } & Record<string, unknown>;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceProcess {
  child: ChildProcess;
  /** Every JSON line it printed on stdout (pino), in order. */
  logs: LogLine[];
  stderr: string;
  exited: Promise<Exit>;
  alive(): boolean;
  /** The first log line whose message matches; fails if the process exits first or after `timeoutMs`. */
  waitForLog(message: string | RegExp, timeoutMs?: number): Promise<LogLine>;
  /** Sends `signal` and waits for the exit (SIGKILL after `timeoutMs`). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>;
}

/** Only what a shell user would have: no DATABASE_URL / REDIS_URL unless the test passes them. */
export function baseEnvironment(): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}) };
}

/** A process of the service (the compiled entry points, or npm itself) with its output collected. */
export function startService(command: string, args: string[], options: { cwd?: string; env: Record<string, string> }): ServiceProcess {
  const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: LogLine[] = [];
  const watchers = new Set<() => void>();
  let pending = '';
  const service = { child, logs, stderr: '' } as ServiceProcess;
  child.stdout!.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        /* not a log line */
      }
    }
    for (const watch of [...watchers]) watch();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    service.stderr += chunk.toString();
  });
  let exit: Exit | null = null;
  service.exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      for (const watch of [...watchers]) watch();
      resolve(exit);
    });
  });
  service.alive = () => exit === null;
  service.waitForLog = (message, timeoutMs = 60_000) =>
    new Promise((resolve, reject) => {
      const matches = (line: LogLine) => typeof line.msg === 'string' && (typeof message === 'string' ? line.msg === message : message.test(line.msg));
      const timer = setTimeout(() => finish(new Error(`no log line ${String(message)} within ${timeoutMs} ms; stderr: ${service.stderr}`)), timeoutMs);
      const finish = (outcome: LogLine | Error) => {
        clearTimeout(timer);
        watchers.delete(check);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const check = () => {
        const found = logs.find(matches);
        if (found) finish(found);
        else if (exit) finish(new Error(`exited (${JSON.stringify(exit)}) before logging ${String(message)}; stderr: ${service.stderr}`));
      };
      watchers.add(check);
      check();
    });
  service.stop = async (signal = 'SIGTERM', timeoutMs = 30_000) => {
    if (exit) return exit;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const result = await service.exited;
    clearTimeout(timer);
    return result;
  };
  return service;
}

/** Runs a command to its end: exit code, stdout and stderr. */
export function runToEnd(
  command: string,
  args: string[],
  options: { cwd?: string; env: Record<string, string>; timeoutMs?: number },
): Promise<Exit & { stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Lines that look like a JavaScript stack trace (`    at fn (file:1:2)`). */
export const STACK_TRACE = /^\s+at .+:\d+:\d+\)?$/m;
