import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { runCli } from '../support/cli.js';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.js';
import { baseEnvironment, ROOT, runToEnd, STACK_TRACE } from '../support/service.js';

// Starts that cannot work must say why and what to do, in a sentence, and exit non-zero:
// never a stack trace, never a database that is not this checkout's own.

let scratch: string;
let foreign: PrivatePostgres;
let notPostgres: net.Server;
let notPostgresPort: number;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'lead-intake-broken-'));
  // As root, PostgreSQL runs as the postgres account, which must enter the data directory's parent.
  await chmod(scratch, 0o755);
  // "Another checkout's" database, running on its own port.
  foreign = await startPrivatePostgres('foreign');
  // A program that is not PostgreSQL: accepts and hangs up.
  notPostgres = net.createServer((socket) => socket.destroy()).listen(0, '127.0.0.1');
  await new Promise((resolve) => notPostgres.once('listening', resolve));
  notPostgresPort = (notPostgres.address() as net.AddressInfo).port;
}, 60_000);
afterAll(async () => {
  await new Promise((resolve) => notPostgres?.close(resolve));
  await foreign?.remove();
  await rm(scratch, { recursive: true, force: true });
});

const entry = (name: string) => path.join(ROOT, 'dist', 'src', name);

function run(script: string, env: Record<string, string>, args: string[] = []) {
  return runToEnd(process.execPath, [entry(script), ...args], { env: { ...baseEnvironment(), PORT: '0', LOG_LEVEL: 'info', ...env }, timeoutMs: 60_000 });
}

describe('a start that cannot work', () => {
  it('explains a port held by another PostgreSQL server and does not join it (API, worker, CLI)', async () => {
    const dir = path.join(scratch, 'beside-foreign');
    const env = { EMBEDDED_PG_DIR: dir, EMBEDDED_PG_PORT: String(foreign.port) };
    for (const script of ['main.js', 'worker-main.js']) {
      const result = await run(script, env);
      expect({ script, code: result.code }).toEqual({ script, code: 1 });
      expect(result.stderr).toContain(`Port ${foreign.port} is held by another PostgreSQL server (data directory ${foreign.current.dataDir})`);
      expect(result.stderr).toMatch(/EMBEDDED_PG_PORT/);
      expect(result.stderr).not.toMatch(STACK_TRACE);
    }
    const cli = await runCli(['demo'], { ...baseEnvironment(), LOG_LEVEL: 'info', ...env });
    expect(cli.code).not.toBe(0);
    expect(cli.stdout).toBe('');
    expect(cli.error).toEqual({
      error: 'database_unavailable',
      message: expect.stringContaining(`Port ${foreign.port} is held by another PostgreSQL server`),
    });

    // Nothing was created here, and nothing was migrated into the other database.
    expect(existsSync(path.join(dir, 'PG_VERSION'))).toBe(false);
    const client = new pg.Client({ connectionString: foreign.url });
    await client.connect();
    try {
      expect((await client.query("SELECT to_regclass('public.workspaces') AS t")).rows[0].t).toBeNull();
    } finally {
      await client.end();
    }
  }, 60_000);

  it('explains a port held by a program that is not PostgreSQL', async () => {
    const dir = path.join(scratch, 'beside-other');
    const result = await run('main.js', { EMBEDDED_PG_DIR: dir, EMBEDDED_PG_PORT: String(notPostgresPort) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`Port ${notPostgresPort} is in use by another program, not PostgreSQL`);
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(existsSync(path.join(dir, 'PG_VERSION'))).toBe(false);
  });

  it('explains a data directory that cannot be created', async () => {
    const file = path.join(scratch, 'a-file');
    await writeFile(file, 'not a directory');
    const result = await run('main.js', { EMBEDDED_PG_DIR: path.join(file, 'postgres') });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`The embedded PostgreSQL cannot create ${file}: it exists and is not a directory.`);
    expect(result.stderr).toMatch(/EMBEDDED_PG_DIR|DATABASE_URL/);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  // Root may write anywhere: only an ordinary user meets a directory without write permission.
  (process.getuid?.() === 0 ? it.skip : it)('explains a data directory without write permission', async () => {
    const locked = path.join(scratch, 'locked');
    await mkdir(locked, { mode: 0o500 });
    const result = await run('main.js', { EMBEDDED_PG_DIR: path.join(locked, 'postgres') });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`The embedded PostgreSQL cannot create ${path.join(locked, 'postgres')}: permission denied.`);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });
});
