import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: unknown;
  error: { error: string; message: string } | null;
}

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../..');

// node:assert rather than jest's expect: the fault and restart scripts run these outside jest.

/** Runs the compiled admin CLI as `npm run --silent cli --` does (global setup built it); `input` is its standard input (empty when undefined). */
export function runCli(args: string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'cli.mjs'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(input ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const parse = (text: string) => {
        try {
          return JSON.parse(text);
        } catch {
          return null;
        }
      };
      resolve({ code, stdout, stderr, json: parse(stdout), error: parse(stderr.trim().split('\n').pop() ?? '') });
    });
  });
}

/** Runs one CLI command against the database; expects success (exit 0, one line of JSON, nothing on stderr) and returns the JSON. */
export async function cliJson<T = Record<string, any>>(databaseUrl: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<T> {
  const result = await runCli(args, { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', ...env }, input);
  assert.deepEqual({ code: result.code, stderr: result.stderr, lines: result.stdout.trim().split('\n').length }, { code: 0, stderr: '', lines: 1 }, `cli ${args.join(' ')}`);
  return result.json as T;
}

/** Runs one CLI command that must be refused: a non-zero exit and nothing on stdout; returns the `{ error, message }` it printed on stderr. */
export async function cliError(databaseUrl: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<{ error: string; message: string }> {
  const result = await runCli(args, { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', ...env }, input);
  assert.notEqual(result.code, 0, `cli ${args.join(' ')} should have been refused`);
  assert.equal(result.stdout, '', `cli ${args.join(' ')} printed on stdout though refused`);
  return result.error!;
}
