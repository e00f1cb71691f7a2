import { afterAll, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readPostmaster, whoHolds } from '../../src/db/embedded/probe.js';
import { ROOT_BASE } from '../../src/db/embedded/location.js';
import { baseEnvironment, ROOT, runToEnd, startService } from '../support/service.js';
import { fetchCheckedAgainstDocument } from '../support/document-check.js';

// The README's quick start as a new user runs it, from a fresh clone of this repository's
// HEAD (commit before running it locally) inside a private (mode 700) directory, with no
// DATABASE_URL and no REDIS_URL, as whichever user runs the tests: as root that is the case
// where PostgreSQL must run as another account that cannot enter the checkout.

const leftovers: string[] = [];
afterAll(async () => {
  for (const dir of leftovers) await rm(dir, { recursive: true, force: true });
});

const isCheckout = existsSync(path.join(ROOT, '.git'));

(isCheckout ? it : it.skip)(
  'a fresh clone in a private directory: npm start with no services, cli demo, GET /me, SIGTERM',
  async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'lead-intake-quickstart-'));
    leftovers.push(parent);
    expect((await stat(parent)).mode & 0o777).toBe(0o700);
    const app = path.join(parent, 'app');
    // Port 0: the system picks a free one, read back from the log line that gives the URL.
    const env = { ...baseEnvironment(), PORT: '0' };

    const clone = await runToEnd('git', ['clone', '--quiet', ROOT, app], { env });
    expect(clone).toMatchObject({ code: 0 });
    // node_modules inside the clone, as `npm ci` would leave them: hard links (or a copy when
    // links are refused), so nothing in the clone points out of the private directory.
    const modules = path.join(app, 'node_modules');
    if ((await runToEnd('cp', ['-al', path.join(ROOT, 'node_modules'), modules], { env })).code !== 0) {
      await rm(modules, { recursive: true, force: true });
      expect(await runToEnd('cp', ['-a', path.join(ROOT, 'node_modules'), modules], { env })).toMatchObject({ code: 0 });
    }

    const service = startService('npm', ['start'], { cwd: app, env });
    let dataDir: string | null = null;
    try {
      const listening = await service.waitForLog('Lead Intake API listening', 240_000);
      const embedded = await service.waitForLog(/started the embedded PostgreSQL/);
      dataDir = String(embedded.data);
      if (dataDir.startsWith(ROOT_BASE)) leftovers.push(path.dirname(dataDir));

      const demo = await runToEnd('npm', ['run', '--silent', 'cli', '--', 'demo'], { cwd: app, env });
      expect({ code: demo.code, stderr: demo.stderr }).toEqual({ code: 0, stderr: '' });
      const { workspace, key } = JSON.parse(demo.stdout) as { workspace: { id: number }; key: { token: string } };
      const me = await fetchCheckedAgainstDocument(`${String(listening.url)}/me`, { headers: { authorization: `Bearer ${key.token}` } });
      expect(me.status).toBe(200);
      expect(((await me.json()) as { data: { workspace: { id: number } } }).data.workspace.id).toBe(workspace.id);

      // As root the data lives where the postgres account can reach it, linked from .data/postgres.
      const visible = path.join(await realpath(app), '.data', 'postgres');
      if (process.getuid?.() === 0) {
        expect((await lstat(visible)).isSymbolicLink()).toBe(true);
        expect(await realpath(visible)).toBe(dataDir);
      } else {
        expect(dataDir).toBe(visible);
      }

      expect(await service.stop('SIGTERM')).toEqual({ code: 0, signal: null });
      expect(existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
      expect(await whoHolds(Number(embedded.port))).toEqual({ kind: 'free' });
    } finally {
      // After a failure: npm forwards SIGTERM to the service, which stops its database.
      await service.stop('SIGTERM', 20_000);
      const orphan = dataDir ? await readPostmaster(dataDir) : null;
      if (orphan) process.kill(orphan.pid, 'SIGINT');
    }
  },
  300_000,
);
