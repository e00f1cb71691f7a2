import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFile, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { startTestApp } from '../support/app.js';
import { createTenant } from '../support/fixtures.js';
import { cli, drain, LOCAL_DELIVERY_ENV } from '../support/outbound.js';
import { freePort } from '../support/ports.js';

// The client as an integrator gets it: `npm pack` of the workspace (src/client/), installed
// into an empty project. There it must stay small, load from ES modules and CommonJS, bundle
// for a browser, type-check (strict) the README's example and test/client-compile/integrator.ts,
// and run the README's example as written against the service.

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../..');
const PACKAGE = path.join(ROOT, 'src', 'client');
const NPM = ['--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'];
const MAX_INSTALLED_BYTES = 2 * 1024 * 1024;

let scratch: string;
let project: string;
let packed: { filename: string; files: Array<{ path: string }> };
let installedBytes: number;

async function diskUsage(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    bytes += entry.isDirectory() ? await diskUsage(full) : (await lstat(full)).blocks * 512;
  }
  return bytes;
}

async function readmeExample(): Promise<string> {
  const readme = await readFile(path.join(PACKAGE, 'README.md'), 'utf8');
  const code = readme.split('\n## Example\n')[1]?.match(/```ts\n([\s\S]*?)```/)?.[1];
  if (!code) throw new Error('src/client/README.md has no ```ts block under "## Example"');
  return code;
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'lead-intake-client-'));
  // prepack builds the package (src/client/build.mjs).
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch, '--loglevel=error'], { cwd: PACKAGE });
  [packed] = JSON.parse(stdout) as [typeof packed];
  project = path.join(scratch, 'project');
  await mkdir(project);
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'integrator', version: '1.0.0', private: true, type: 'module' }));
  // openapi-fetch comes from npm's cache, filled by the repository's own `npm ci`.
  await run('npm', ['install', '--prefer-offline', ...NPM, path.join(scratch, packed.filename)], { cwd: project });
  installedBytes = await diskUsage(path.join(project, 'node_modules'));
  // Node's types for the example's receiver (node:http, Buffer): the integrator's own dev dependency.
  await symlink(path.join(ROOT, 'node_modules', '@types'), path.join(project, 'node_modules', '@types'), 'dir');
  await writeFile(path.join(project, 'example.mts'), await readmeExample());
  await copyFile(path.join(ROOT, 'test', 'client-compile', 'integrator.ts'), path.join(project, 'integrator.ts'));
  await writeFile(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] },
      files: ['example.mts', 'integrator.ts'],
    }),
  );
}, 180_000);
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('the packed client in an empty project', () => {
  it('installs in under 2 MB with openapi-fetch as its only dependency, and ships built code, declarations and README only', async () => {
    expect(installedBytes).toBeLessThan(MAX_INSTALLED_BYTES);
    const manifest = JSON.parse(await readFile(path.join(project, 'node_modules', 'lead-intake-client', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies)).toEqual(['openapi-fetch']);
    expect(
      packed.files
        .map((file) => file.path)
        .filter(
          (file) =>
            !/^(dist\/(esm|cjs)\/(src\/client\/[\w-]+\.(js|d\.ts)|generated\/(api\.d\.ts|limits\.(js|d\.ts)))|dist\/cjs\/package\.json|package\.json|README\.md)$/.test(file),
        ),
    ).toEqual([]);
  });

  it('type-checks, strict, the README example and an integrator using every call (a lead without a contact detail is an error there)', async () => {
    const typecheck = await run(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project]).then(
      () => ({ status: 0, output: '' }),
      (error: { code: number; stdout: string; stderr: string }) => ({ status: error.code, output: error.stdout + error.stderr }),
    );
    expect(typecheck).toEqual({ status: 0, output: '' });
  }, 60_000);

  it('loads from ES modules and from CommonJS', async () => {
    const exported = 'Object.entries(client).map(([name, value]) => name + ":" + typeof value).sort().join(" ")';
    const esm = await run(process.execPath, ['--input-type=module', '-e', `import * as client from 'lead-intake-client'; console.log(${exported});`], { cwd: project });
    const cjs = await run(process.execPath, ['--input-type=commonjs', '-e', `const client = require('lead-intake-client'); console.log(${exported});`], { cwd: project });
    expect(esm.stdout).toContain('createLeadIntakeClient:function');
    expect(esm.stdout).toContain('verifyWebhook:function');
    expect(cjs.stdout).toBe(esm.stdout);
  });

  it('bundles for a browser: no Node built-in anywhere in it', async () => {
    const bundle = await build({
      stdin: { contents: "export { createLeadIntakeClient, verifyWebhook } from 'lead-intake-client';", resolveDir: project, loader: 'js' },
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent',
    });
    expect(bundle.errors).toEqual([]);
    expect(bundle.outputFiles[0]!.text).not.toMatch(/\brequire\(|from ["']node:/);
  });

  it('runs the README example as written: one lead, a 250-row import, and every workflow delivery verified', async () => {
    const t = await startTestApp({ env: LOCAL_DELIVERY_ENV });
    const baseUrl = await t.listen();
    try {
      const tenant = await createTenant(t.ctx.db);
      // The README example listens on a port it is told: picked free here, released, then taken by the example.
      const receiverPort = await freePort();
      const workflow = await cli<{ signing_secret: string }>(t, [
        'workflow',
        'create',
        '--workspace',
        String(tenant.workspaceId),
        '--trigger',
        'lead_created',
        '--url',
        `http://127.0.0.1:${receiverPort}/hooks`,
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
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const exited = once(child, 'exit') as Promise<[number | null]>;
      let running = true;
      void exited.then(() => {
        running = false;
      });
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
