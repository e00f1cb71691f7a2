import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../support/service.js';

/** Runs a CLI command with `input` on its standard input (user set-password); its JSON answer, or throws with stderr. */
export function runCliWithInput(databaseUrl: string, args: string[], input: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'cli', 'main.js'), ...args], {
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(stderr))));
    child.stdin.end(`${input}\n`);
  });
}
