import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startTestApp } from '../support/app.js';
import { createTenant } from '../support/fixtures.js';
import { cli, drain, LOCAL_DELIVERY_ENV } from '../support/outbound.js';

// The README's "Use from TypeScript" example, taken from the README itself, in a project
// of its own that depends on this package (a symlink, as `npm install <folder>` makes):
// it must type-check and run as written against the service.

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../..');
let project: string;

async function readmeExample(): Promise<string> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.split('\n## Use from TypeScript\n')[1]?.split('\n## ')[0];
  const code = section?.match(/```ts\n([\s\S]*?)```/)?.[1];
  if (!code) throw new Error('README.md has no ```ts block under "## Use from TypeScript"');
  return code;
}

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  project = await mkdtemp(path.join(os.tmpdir(), 'lead-intake-readme-'));
  await mkdir(path.join(project, 'node_modules'));
  await symlink(ROOT, path.join(project, 'node_modules', 'lead-intake-api'), 'dir');
  await symlink(path.join(ROOT, 'node_modules', '@types'), path.join(project, 'node_modules', '@types'), 'dir');
  await writeFile(path.join(project, 'example.mts'), await readmeExample());
  await writeFile(path.join(project, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
    files: ['example.mts'],
  }));
});
afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

describe('the README TypeScript example', () => {
  it('type-checks in a project that depends on the package', () => {
    const run = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project], { encoding: 'utf8' });
    expect({ status: run.status, output: run.stdout + run.stderr }).toEqual({ status: 0, output: '' });
  }, 60_000);

  it('runs as written: one lead, a 250-row import, and every workflow delivery verified', async () => {
    const t = await startTestApp({ env: LOCAL_DELIVERY_ENV });
    const baseUrl = await t.listen();
    try {
      const tenant = await createTenant(t.ctx.db);
      const receiverPort = await freePort();
      const workflow = await cli<{ signing_secret: string }>(t, [
        'workflow', 'create', '--workspace', String(tenant.workspaceId), '--trigger', 'lead_created', '--url', `http://127.0.0.1:${receiverPort}/hooks`,
      ]);
      const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), 'example.mts'], {
        cwd: project,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          LEAD_INTAKE_URL: baseUrl,
          LEAD_INTAKE_API_KEY: tenant.token,
          LEAD_INTAKE_WEBHOOK_SECRET: workflow.signing_secret,
          RECEIVER_PORT: String(receiverPort),
        },
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
      child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
      const exited = once(child, 'exit') as Promise<[number | null]>;
      let running = true;
      void exited.then(() => { running = false; });
      // The test app runs no worker: poll the outbox as the worker would until the example ends.
      while (running) {
        await drain(t);
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 100))]);
      }
      const [code] = await exited;
      expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('verified 251 of 251 deliveries') });
      expect(output).toContain('lead ');
      expect(output).toMatch(/created: 250,/);
    } finally {
      await t.close();
    }
  }, 90_000);
});
